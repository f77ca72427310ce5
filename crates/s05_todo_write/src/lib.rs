//! # Lesson 5: todo write
//!
//! On a long task the model loses the thread: each tool result pushes the
//! original request further back, and steps get skipped. This lesson gives
//! it a `todo_write` tool that runs nothing but records a plan — a list of
//! tasks, each pending, in progress or completed — and shows it back. When
//! the list has open tasks and three model calls go by without an update,
//! a reminder is added to the conversation before the next call. The loop
//! does not change.
//!
//! Start reading at [`todo`](mod@todo): the list, its validation, the tool and the
//! reminder. Then [`hooks`], where the tool joins the dispatch map and
//! `before_model_call` asks for the reminder.

pub mod builtin_hooks;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod permission;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s05",
    title: "Todo write",
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
    let hooks = LessonHooks::new(
        setup.workspace().clone(),
        setup.notices().clone(),
        options.approver,
    );
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
