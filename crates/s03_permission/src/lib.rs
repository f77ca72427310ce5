//! # Lesson 3: permission
//!
//! Lesson 2's model can run any shell command it likes. This lesson puts a
//! permission gate in front of every tool call: a hard deny list for `bash`,
//! rules that ask the user first (`rm`, writes to `/etc`, paths outside the
//! workspace), and the user's `Allow? [y/N]`. A refused call becomes an
//! `is_error` result telling the model why. The loop does not change.
//!
//! Start reading at [`permission`]: the lists, the three gates and the
//! approvers. Then [`hooks`], where `run_tool` asks the gate before it
//! dispatches.

pub mod dispatch;
pub mod hooks;
pub mod permission;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s03",
    title: "Permission",
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
    let hooks = LessonHooks::new(setup.workspace, approver);
    Ok(Agent::new(setup.model, setup.model_id, hooks))
}
// ANCHOR_END: build
