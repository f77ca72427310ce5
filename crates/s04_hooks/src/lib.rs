//! # Lesson 4: hooks
//!
//! Lesson 3 wrote its permission check straight into `run_tool`; every
//! further check would have been another line there. This lesson adds a
//! hook registry with four events — `UserPromptSubmit`, `PreToolUse`,
//! `PostToolUse`, `Stop` — and triggers them from the loop's hook points.
//! The permission gate becomes one `PreToolUse` hook among several. The
//! loop does not change; `permission.rs` keeps its three gates.
//!
//! Start reading at [`hook_registry`]: register callbacks per event,
//! trigger them. Then [`builtin_hooks`], the hooks this lesson registers,
//! and [`hooks`], where the loop's hook points trigger the events.

pub mod builtin_hooks;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod permission;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s04",
    title: "Hooks",
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
