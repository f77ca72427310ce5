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
