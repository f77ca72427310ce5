//! # Lesson 10: system prompt
//!
//! Until now the system prompt was a string written once, with a sentence
//! or a block added by each lesson whether or not what it described was
//! there. This lesson assembles it before every model call from sections
//! keyed by topic — identity, workspace, tools, planning, skills, memory —
//! each written from the agent's real state at that moment (the tools the
//! model is offered, the workspace path, the skill catalog, the memory
//! index on disk) and left out when that state is absent. The result is
//! keyed by a hash of its inputs: the same inputs give back the same
//! prompt, byte for byte (`[cache hit]`), and a changed input builds a new
//! one (`[assembled] sections: …`). The end of the stable prefix carries a
//! cache breakpoint, and so does the end of each request's conversation,
//! so the provider can reuse its work on those bytes. The loop does not
//! change.
//!
//! Start reading at [`prompt`]: the section type and its key, the
//! assembler and its cache, the sections this lesson writes, and the
//! conversation's breakpoints. Then [`hooks`], where `prompt_sections`
//! lists the sections, `system_prompt` hands them to the assembler, `tools`
//! marks the last tool for caching and `call_model` the conversation.

pub mod builtin_hooks;
pub mod compact;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod memory;
pub mod permission;
pub mod prompt;
pub mod skills;
pub mod subagent;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::CompactConfig;
pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
pub use skills::SkillsArgs;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s10",
    title: "System prompt",
    demo_script: include_str!("../demo.json"),
    demo_model: shared::model::scripted::demo_model,
};

/// What a caller may choose about the agent besides the [`Setup`]. Each
/// field has a default, so `Options::default()` builds the lesson as its
/// binary runs it; tests and `--yes` change the fields they care about.
pub struct Options {
    /// Who answers `Allow? [y/N]`: the terminal by default.
    pub approver: Box<dyn Approver>,
    /// Where the skills are: the workspace's `skills/`, else the course's,
    /// unless a directory is named.
    pub skills: SkillsArgs,
    /// When and how much to compact; `main` reads overrides from the
    /// environment.
    pub compact: CompactConfig,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
            skills: SkillsArgs::default(),
            compact: CompactConfig::default(),
        }
    }
}

/// Builds the agent: the shared loop plus this lesson's hooks, asking
/// `options.approver` before risky calls, with the skills `options.skills`
/// finds, compacting by `options.compact`.
pub fn build(setup: Setup, options: Options) -> anyhow::Result<Agent<LessonHooks>> {
    let hooks = LessonHooks::new(&setup, options)?;
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
