//! # Lesson 13: background tasks
//!
//! Some commands take minutes: an install, a build, a test suite. Until
//! now the agent sat through each one. This lesson lets `bash` leave a
//! command running: with `run_in_background` (or when the command looks
//! slow and the model did not say), the call is answered at once with an
//! id like `bg_0001`, the command runs as a tokio task with its own
//! timeout, and when it ends its output comes back as a
//! `<task_notification>` — after the tool results of the next round, or as
//! a message of its own when the agent is idle, which the REPL waits for
//! alongside the user's next line. Each notification is delivered once,
//! and commands still running when the session ends are reported and
//! killed with everything they started. The loop does not change; two
//! hook points between turns (`idle_work`, `on_exit`) are new in `shared`.
//!
//! Start reading at [`background`]: [`background::tool`] for the flag,
//! [`background::heuristic`] for the guess, [`BackgroundTasks::start`] for
//! the task, [`background::notification`] for what the model reads. Then
//! [`hooks`], where the notifications join the conversation.
//!
//! [`BackgroundTasks::start`]: background::BackgroundTasks::start

pub mod background;
pub mod builtin_hooks;
pub mod compact;
pub mod dispatch;
pub mod finished;
pub mod hook_registry;
pub mod hooks;
pub mod memory;
pub mod permission;
pub mod prompt;
pub mod recovery;
pub mod skills;
pub mod subagent;
pub mod tasks;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::CompactConfig;
pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
use recovery::{Recovery, RecoveryPolicy};
pub use skills::SkillsArgs;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s13",
    title: "Background tasks",
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
    /// How failed model calls are retried; `main` reads overrides from the
    /// environment.
    pub recovery: RecoveryPolicy,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
            skills: SkillsArgs::default(),
            compact: CompactConfig::default(),
            recovery: RecoveryPolicy::default(),
        }
    }
}

/// Builds the agent: the shared loop plus this lesson's hooks, asking
/// `options.approver` before risky calls, with the skills `options.skills`
/// finds, compacting by `options.compact`, recovering by
/// `options.recovery`.
pub fn build(setup: Setup, options: Options) -> anyhow::Result<Agent<LessonHooks>> {
    // ANCHOR: stack
    // One model stack for every call the agent makes — the loop's, the
    // subagent's, the summaries and memory's side queries — so all of them
    // retry, back off and fall back alike.
    let recovery = Recovery::new(options.recovery.clone(), setup.notices().clone());
    let setup = setup.map_model(|model| recovery.wrap(model));
    // ANCHOR_END: stack
    let hooks = LessonHooks::new(&setup, options, recovery)?;
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
