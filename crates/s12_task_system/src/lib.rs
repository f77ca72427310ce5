//! # Lesson 12: task system
//!
//! A todo list (lesson 5) is one agent's plan for the job at hand, kept in
//! memory. Bigger work has an order — the schema before the endpoints,
//! the endpoints before their tests — and outlives a session. This lesson
//! adds a task board on disk: `.tasks/<id>.json`, one file per task, each
//! with a status (pending, in progress, completed), an owner and the tasks
//! it is blocked by, and five tools to create, list, get, claim and
//! complete tasks. A task can be claimed only when everything it waits for
//! is completed, and the claim is atomic across threads and processes (a
//! file lock), because later lessons let several agents share one board.
//! The loop does not change.
//!
//! Start reading at [`tasks`]: [`tasks::task`] for the format,
//! [`tasks::board`] for the operations and their checks, [`tasks::lock`]
//! for why a file lock, [`tasks::tools`] for what the model sees. Then
//! [`hooks`], where the tools join the dispatch map.

pub mod builtin_hooks;
pub mod compact;
pub mod dispatch;
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
    id: "s12",
    title: "Task system",
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
