//! # Lesson 18: MCP plugins
//!
//! Every tool so far was written into the harness. The Model Context
//! Protocol lets any program offer tools instead: the agent starts it as a
//! child process, speaks JSON-RPC with it over standard input and output
//! (through rmcp, the protocol's official Rust SDK), lists its tools and
//! calls them. This lesson reads the servers from `.mcp.json`, connects one
//! on `connect_mcp`, and puts its tools in the same dispatch map as every
//! other tool, as `mcp__<server>__<tool>`, after the built-in ones so the
//! cached request prefix stays. The permission gate asks by what a server
//! claims about its tools; notifications, server requests (`roots/list`),
//! timeouts and servers that die are all handled, and every server is
//! stopped when the session ends. Only the lead gets MCP tools. The loop
//! does not change.
//!
//! Start reading at [`mcp`]: [`mcp::McpHub::connect`] and
//! [`mcp::McpHub::call`], then [`mcp::client`] for what a server sends on
//! its own and [`mcp::tools`] for how its tools reach the dispatch map.

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
pub use mcp::McpOptions;
use permission::{Approver, TerminalApprover};
use recovery::{Recovery, RecoveryPolicy};
pub use skills::SkillsArgs;
pub use team::Autonomy;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s18",
    title: "MCP plugins",
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
