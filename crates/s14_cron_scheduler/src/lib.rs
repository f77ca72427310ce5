//! # Lesson 14: cron scheduler
//!
//! Until now every turn began with someone typing. This lesson lets the
//! agent set an alarm: `schedule_cron` takes a 5-field cron expression and
//! a prompt, and when the expression matches the local time, the prompt
//! arrives as `[Scheduled] …`, a user message, as soon as the agent is
//! idle. Jobs recur or fire once, last for the session or are saved to
//! `.scheduled_tasks.json`; `list_crons` shows when each fires next and
//! `cancel_cron` removes one. A tokio task ticks the schedule at every
//! minute mark; the REPL delivers what came due through lesson 13's
//! `idle_work`, racing it against the user's next line. The loop does not
//! change.
//!
//! Start reading at [`cron`]: [`cron::CronExpr`] for the matcher written
//! by hand, [`cron::Schedule`] for the rules about time (late ticks,
//! daylight saving), [`cron::scheduler`] for the ticker and the queue,
//! [`cron::tools`] for what the model sees. Then [`hooks`], where the
//! queue joins `idle_work`.

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

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s14",
    title: "Cron scheduler",
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
    /// Where the cron scheduler reads the time: the system clock, or a
    /// test's own.
    pub clock: Arc<dyn Clock>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
            skills: SkillsArgs::default(),
            compact: CompactConfig::default(),
            recovery: RecoveryPolicy::default(),
            clock: Arc::new(SystemClock),
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
