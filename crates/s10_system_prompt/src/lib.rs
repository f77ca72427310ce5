//! # Lesson 10: system prompt
//!
//! Until now the system prompt was a string written once, with a sentence
//! or a block added by each lesson whether or not what it described was
//! there. This lesson assembles it before every model call from sections
//! keyed by topic — identity, workspace, tools, planning, skills, memory —
//! each written from the agent's real state at that moment (the tools the
//! model is offered, the workspace path, the skill catalog, the memory
//! index on disk) and left out when that state is absent. The result is
//! keyed by a hash of its inputs: the same inputs give back the same
//! prompt, byte for byte (`[cache hit]`), and a changed input builds a new
//! one (`[assembled] sections: …`). The end of the stable prefix carries a
//! cache breakpoint, so the provider can reuse its work on those bytes. The
//! loop does not change.
//!
//! Start reading at [`prompt`]: the section type and its key, the
//! assembler and its cache, and the sections this lesson writes. Then
//! [`hooks`], where `prompt_sections` lists the sections, `system_prompt`
//! hands them to the assembler and `tools` marks the last tool for caching.

pub mod builtin_hooks;
pub mod compact;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod memory;
pub mod permission;
pub mod prompt;
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
    id: "s10",
    title: "System prompt",
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
