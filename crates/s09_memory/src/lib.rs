//! # Lesson 9: memory
//!
//! Compaction keeps a long session going by summarising it, and a summary
//! loses details; a new session starts from nothing. This lesson adds a
//! layer that neither touches: `.memory/` in the workspace, one Markdown
//! file per memory plus a `MEMORY.md` index. The index goes into the system
//! prompt of every request; at the start of each turn a side query (a
//! separate, small model call) picks the memories relevant to the prompt
//! and their bodies join it; when the turn ends another side query
//! extracts new memories from the dialogue, and at ten files a third one
//! consolidates the store. The loop does not change.
//!
//! Start reading at [`memory`]: [`memory::file`](mod@memory::file) and
//! [`memory::store`] for the files, [`memory::recall`], [`memory::extract`]
//! and [`memory::consolidate`] for the three side queries, and
//! [`memory::MemorySystem`] for how they meet the hooks. Then [`hooks`],
//! where `system_prompt`, `on_user_prompt`, `before_model_call` and
//! `on_stop` each gain a line or two.

pub mod builtin_hooks;
pub mod compact;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod memory;
pub mod permission;
pub mod skills;
pub mod subagent;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::{CompactConfig, Compactor};
pub use hooks::LessonHooks;
use memory::MemorySystem;
use permission::{Approver, TerminalApprover};
pub use skills::SkillsArgs;
use subagent::Subagent;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s09",
    title: "Memory",
    demo_script: include_str!("../demo.json"),
};

/// Builds the agent: the shared loop plus this lesson's hooks, asking on
/// the terminal before risky calls.
pub fn build(setup: Setup) -> anyhow::Result<Agent<LessonHooks>> {
    build_with_approver(setup, Box::new(TerminalApprover))
}

/// Builds the agent with `approver` answering the permission questions
/// (`--yes` and tests use their own) and the default skills directory.
pub fn build_with_approver(
    setup: Setup,
    approver: Box<dyn Approver>,
) -> anyhow::Result<Agent<LessonHooks>> {
    build_with_skills(setup, approver, &SkillsArgs::default())
}

/// Builds the agent with the skills found as `args` says (the workspace's
/// `skills/`, else the course's, unless a directory is given).
pub fn build_with_skills(
    setup: Setup,
    approver: Box<dyn Approver>,
    args: &SkillsArgs,
) -> anyhow::Result<Agent<LessonHooks>> {
    let skills = skills::load(args, setup.workspace.root())?;
    let subagent = Subagent::new(&setup);
    // The thresholds come from the environment (or `.env`) when set there;
    // the summaries go through the same model as the conversation.
    let config = CompactConfig::from_env()?;
    let compactor = Compactor::new(
        &setup.workspace,
        setup.model.clone(),
        &setup.model_id,
        config,
    );
    // Memory's side queries go through the agent's own model and model id.
    let memory = MemorySystem::new(
        &setup.workspace,
        setup.model.clone(),
        setup.model_id.clone(),
    );
    let hooks = LessonHooks::new(setup.workspace, approver, subagent, compactor, memory)
        .with_skills(skills);
    Ok(Agent::new(setup.model, setup.model_id, hooks))
}
// ANCHOR_END: build
