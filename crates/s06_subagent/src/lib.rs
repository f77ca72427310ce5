//! # Lesson 6: subagent
//!
//! A long job fills the history with steps that matter only while they
//! run: thirty file reads to find one function, and the original request
//! is buried under them. This lesson adds a `task` tool that hands such a
//! job to a subagent: the same shared loop, started with a fresh history,
//! the base tools minus `task`, its own system prompt and a limit of 30
//! rounds. The parent gets back only the subagent's final text. The
//! subagent's tool calls still pass the parent's `PreToolUse` hooks, so
//! the permission gate applies to it as well.
//!
//! Start reading at [`subagent`]: the tool, the subagent's hooks, and how
//! its outcome becomes one tool result. Then [`hooks`], where `task` is
//! registered in the dispatch map with the hook registry the parent and
//! its subagents share.

pub mod builtin_hooks;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod permission;
pub mod subagent;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s06",
    title: "Subagent",
    demo_script: include_str!("../demo.json"),
    demo_model: shared::model::scripted::demo_model,
};

/// What a caller may choose about the agent besides the [`Setup`]. Each
/// field has a default, so `Options::default()` builds the lesson as its
/// binary runs it; tests and `--yes` change the fields they care about.
pub struct Options {
    /// Who answers `Allow? [y/N]`: the terminal by default.
    pub approver: Box<dyn Approver>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
        }
    }
}

/// Builds the agent: the shared loop plus this lesson's hooks, asking
/// `options.approver` before risky calls.
pub fn build(setup: Setup, options: Options) -> anyhow::Result<Agent<LessonHooks>> {
    let hooks = LessonHooks::new(&setup, options);
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
