//! # Lesson 21: the goal loop
//!
//! Until now a turn ended when the model stopped asking for tools: the
//! model alone decided that the work was done, and "tests passed" in its
//! reply was as good as the tests passing. `/goal <condition>` moves that
//! decision to the harness. When the model ends a turn with a goal set, an
//! evaluator — separate from the agent, and shown only evidence the
//! harness itself delivered since the goal was set (the results of
//! background commands and workflow runs, never the user's or the model's
//! words) — says whether the
//! condition is met. If not, a continuation prompt is queued, behind any
//! external event, and the agent goes on; after a budget of 20
//! continuation turns the goal is marked blocked and the user told. The
//! loop does not change.
//!
//! Start reading at [`goal`]: [`goal::evidence`] for what counts,
//! [`goal::GoalLoop::after_turn`] for the gate, [`goal::evaluator`] for
//! the judges. Then `idle_work` in [`hooks`] for the order of deliveries.

pub mod background;
pub mod builtin_hooks;
pub mod compact;
pub mod cron;
pub mod dispatch;
pub mod finished;
pub mod goal;
pub mod hook_registry;
pub mod hooks;
pub mod mcp;
pub mod memory;
pub mod permission;
pub mod prompt;
pub mod recovery;
pub mod settings;
pub mod skills;
pub mod slash;
pub mod subagent;
pub mod tasks;
pub mod team;
pub mod todo;
pub mod workflow;
pub mod worktrees;

use std::sync::Arc;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::CompactConfig;
use cron::{Clock, SystemClock};
pub use goal::{EvaluatorChoice, GoalOptions};
pub use hooks::LessonHooks;
pub use mcp::McpOptions;
use permission::{Approver, TerminalApprover};
use recovery::{Recovery, RecoveryPolicy};
pub use settings::Settings;
pub use skills::SkillsArgs;
pub use team::Autonomy;
pub use workflow::WorkflowOptions;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s21",
    title: "Goal loop",
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
    /// How long MCP servers may take to start and to answer, and servers
    /// configured besides `.mcp.json`'s.
    pub mcp: McpOptions,
    /// The settings file (lesson 19): the gate and the hook registry take
    /// its permission rules and command hooks from here; `main` has
    /// already folded its numbers and its MCP servers into the fields
    /// above. The default is no file.
    pub settings: Settings,
    /// The workflows the `Workflow` tool can start (the sample
    /// `review-changes` by default) and how many of their agents may run
    /// at once (lesson 20).
    pub workflows: WorkflowOptions,
    /// Goals (lesson 21): which judge, and how many continuation turns
    /// each goal may use. The default is the keyword judge and 20 turns.
    pub goal: GoalOptions,
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
            mcp: McpOptions::default(),
            settings: Settings::default(),
            workflows: WorkflowOptions::default(),
            goal: GoalOptions::default(),
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
