//! # Lesson 17: worktree isolation
//!
//! Lessons 15 and 16 say who works on what; nothing yet says *where*. Two
//! teammates in one checkout overwrite each other's files and see each
//! other's half-done changes. This lesson gives each task its own git
//! worktree — a second checkout of the repository in `.worktrees/<name>`,
//! on its own branch `wt/<name>` — through the git CLI. The lead creates
//! worktrees bound to tasks; a teammate that claims a bound task runs every
//! file and shell tool inside that worktree, confined to it as lesson 2
//! confines tools to the workspace. Removing a worktree is refused while it
//! holds work that would be lost, and every change is logged in
//! `.worktrees/events.jsonl` after git succeeded. The loop does not change.
//!
//! Start reading at [`worktrees`]: [`worktrees::manager`] for the
//! operations, [`worktrees::name`] for the names, [`worktrees::tools`] for
//! what the lead sees. Then `place` in [`team::teammate`], where a
//! teammate's tools move into the worktree of the task it holds.

pub mod background;
pub mod builtin_hooks;
pub mod compact;
pub mod cron;
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
pub mod team;
pub mod todo;
pub mod worktrees;

use std::sync::Arc;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::CompactConfig;
use cron::{Clock, SystemClock};
pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
use recovery::{Recovery, RecoveryPolicy};
pub use skills::SkillsArgs;
pub use team::Autonomy;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s17",
    title: "Worktree isolation",
    demo_script: include_str!("../demo.json"),
    demo_model: team::scripts::demo_model,
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
    /// Where the cron scheduler reads the time: the system clock, or a
    /// test's own.
    pub clock: Arc<dyn Clock>,
    /// How idle teammates scan the task board, and how long their claims
    /// hold.
    pub autonomy: Autonomy,
    /// The team's name (`--team`): its mailboxes are
    /// `.mailboxes/<team>/`, apart from any other team's in the workspace.
    pub team: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
            skills: SkillsArgs::default(),
            compact: CompactConfig::default(),
            recovery: RecoveryPolicy::default(),
            clock: Arc::new(SystemClock),
            autonomy: Autonomy::default(),
            team: team::DEFAULT_TEAM.to_string(),
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
