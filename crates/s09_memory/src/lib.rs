//! # Lesson 9: memory
//!
//! Compaction keeps a long session going by summarising it, and a summary
//! loses details; a new session starts from nothing. This lesson adds a
//! layer that neither touches: `.memory/` in the workspace, one Markdown
//! file per memory plus a `MEMORY.md` index. The index goes into the system
//! prompt of every request; at the start of each turn a side query (a
//! separate, small model call) picks the memories relevant to the prompt
//! and their bodies join it; when the turn ends another side query
//! extracts new memories from the dialogue, and at ten files a third one
//! consolidates the store. The loop does not change.
//!
//! Start reading at [`memory`]: [`memory::file`](mod@memory::file) and
//! [`memory::store`] for the files, [`memory::recall`], [`memory::extract`]
//! and [`memory::consolidate`] for the three side queries, and
//! [`memory::MemorySystem`] for how they meet the hooks. Then [`hooks`],
//! where `system_prompt`, `on_user_prompt`, `before_model_call` and
//! `on_stop` each gain a line or two.

pub mod builtin_hooks;
pub mod compact;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod memory;
pub mod permission;
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
    id: "s09",
    title: "Memory",
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
