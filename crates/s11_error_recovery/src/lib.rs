//! # Lesson 11: error recovery
//!
//! A model call fails more often than code expects: the provider is rate
//! limited (429) or overloaded (529), a connection drops, a stream stops
//! half-way, the conversation no longer fits, or the reply runs into
//! `max_tokens`. Until now any of these ended the turn. This lesson wraps
//! the model call in a recovery policy ([`recovery`]): transient failures
//! wait with exponential backoff and jitter (or as long as `retry-after`
//! says) and try again, up to ten attempts; three overloads in a row switch
//! the turn to `FALLBACK_MODEL_ID`; a prompt that is too long goes through
//! lesson 8's reactive compaction; a reply cut by `max_tokens` is asked
//! for again with 64,000 tokens of room, then continued up to three times.
//! Every decision prints one `[recovery]` line. The loop does not change.
//!
//! Start reading at [`recovery`](mod@recovery): the diagram, then
//! [`recovery::Recovery::send`]. Then [`recovery::policy`] for the numbers,
//! [`recovery::backoff`] for the waits and [`recovery::truncation`] for
//! what is kept of a cut-off reply. In [`hooks`], `call_model` hands the
//! call to [`recovery::Recovery::send`].

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
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::{CompactConfig, Compactor};
pub use hooks::LessonHooks;
use memory::MemorySystem;
use permission::{Approver, TerminalApprover};
use recovery::{Recovery, RecoveryPolicy};
pub use skills::SkillsArgs;
use subagent::Subagent;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s11",
    title: "Error recovery",
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
    // FALLBACK_MODEL_ID and RECOVERY_BASE_DELAY_MS, from the environment
    // or `.env`, which the front end has loaded by now.
    let recovery = Recovery::new(RecoveryPolicy::from_env()?);
    let hooks = LessonHooks::new(setup.workspace, approver, subagent, compactor, memory)
        .with_skills(skills)
        .with_recovery(recovery);
    Ok(Agent::new(setup.model, setup.model_id, hooks))
}
// ANCHOR_END: build
