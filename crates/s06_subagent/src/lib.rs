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
//! its outcome becomes one tool result. Then [`hooks`], where `task` joins
//! the tool list and `run_tool` lends the subagent the hook registry.

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
use subagent::Subagent;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s06",
    title: "Subagent",
    demo_script: include_str!("../demo.json"),
};

/// Builds the agent: the shared loop plus this lesson's hooks, asking on
/// the terminal before risky calls.
pub fn build(setup: Setup) -> anyhow::Result<Agent<LessonHooks>> {
    build_with_approver(setup, Box::new(TerminalApprover))
}

/// Builds the agent with `approver` answering the permission questions
/// (`--yes` and tests use their own).
pub fn build_with_approver(
    setup: Setup,
    approver: Box<dyn Approver>,
) -> anyhow::Result<Agent<LessonHooks>> {
    let subagent = Subagent::new(&setup);
    let hooks = LessonHooks::new(setup.workspace, approver, subagent);
    Ok(Agent::new(setup.model, setup.model_id, hooks))
}
// ANCHOR_END: build
