//! # Lesson 7: skill loading
//!
//! Knowledge the agent needs only sometimes — how to review code, how to
//! build an MCP server — should not ride along in every request. This
//! lesson keeps it in skills: folders with a `SKILL.md`. The system prompt
//! carries only a catalog, one line per skill; the model calls the new
//! `load_skill` tool to get a skill's full text when a task calls for it,
//! and that text arrives as a tool result. The loop does not change.
//!
//! Start reading at [`skills`]: [`skills::discovery`] finds the directory,
//! [`skills::frontmatter`] and [`skills::registry`] read it once at
//! start-up, [`skills::tool`] serves `load_skill`. Then [`hooks`], where the
//! catalog joins the system prompt and the tool joins the dispatch map.

pub mod builtin_hooks;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod permission;
pub mod skills;
pub mod subagent;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
pub use skills::SkillsArgs;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s07",
    title: "Skill loading",
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
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
            skills: SkillsArgs::default(),
        }
    }
}

/// Builds the agent: the shared loop plus this lesson's hooks, asking
/// `options.approver` before risky calls, with the skills `options.skills`
/// finds.
pub fn build(setup: Setup, options: Options) -> anyhow::Result<Agent<LessonHooks>> {
    let hooks = LessonHooks::new(&setup, options)?;
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
