//! # Lesson 16: autonomous agents
//!
//! In lesson 15 an idle teammate waits for the lead to send it work. When
//! the work is already on the task board (lesson 12), with its order in
//! `blockedBy`, the board itself says what can start, and asking the lead
//! each time is a wasted round trip. So an idle teammate now waits for mail
//! for a while, then scans the board and claims a task that can start, with
//! lesson 12's atomic claim — as a *lease* it renews while it works. An
//! empty board keeps it idle, scanning less and less often; a task whose
//! owner died is claimed again once its lease runs out, and the lead is
//! told. The loop does not change.
//!
//! Start reading at [`team::autonomy`], then `idle` and `work` in
//! [`team::teammate`], then [`tasks::lease`] for claims that expire, and
//! [`team::board_tools`] for the tools a teammate gets.

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
    id: "s16",
    title: "Autonomous agents",
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
