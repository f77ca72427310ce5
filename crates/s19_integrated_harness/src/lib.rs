//! # Lesson 19: the integrated harness
//!
//! Eighteen lessons put eighteen mechanisms on one loop, and each came
//! with its own flag or variable, or with no way to change it at all but
//! to edit the code. An agent someone uses every day needs them all at
//! once, set for *this* project: which commands may run without a
//! question, which scripts check a call before it runs, which MCP servers
//! to start, when to compact. This lesson reads all of that from one TOML
//! file, `.agent/settings.toml` (or `--settings FILE`), once at start:
//! permission rules in Claude Code's notation that lesson 3's gate applies
//! before its own, hooks as shell commands that lesson 4's registry runs
//! next to its closures, and the numbers of lessons 7, 8, 11 and 16 as a
//! layer under the environment. A bad file is refused with the file, the
//! key and the reason before anything starts. `/status` shows what is
//! configured and running and `/help` the commands, answered without a
//! model call. The loop does not change.
//!
//! Start reading at [`settings`]: [`settings::rules`] for the permission
//! rules, [`settings::command_hooks`] for the hooks,
//! [`settings::layers`] for which value wins. Then [`slash`] for `/status`.

pub mod background;
pub mod builtin_hooks;
pub mod compact;
pub mod cron;
pub mod dispatch;
pub mod finished;
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
pub mod worktrees;

use std::sync::Arc;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::CompactConfig;
use cron::{Clock, SystemClock};
pub use hooks::LessonHooks;
pub use mcp::McpOptions;
use permission::{Approver, TerminalApprover};
use recovery::{Recovery, RecoveryPolicy};
pub use settings::Settings;
pub use skills::SkillsArgs;
pub use team::Autonomy;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s19",
    title: "Integrated harness",
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
