//! # Lesson 8: context compact
//!
//! The context window is finite, and an agent fills it: every file read and
//! every command's output stays in the history and goes out again with each
//! request, until the provider refuses the request as too long. This lesson
//! makes room, before every model call, in four layers, cheap first: large
//! new tool results go to disk ([`compact::budget`]), the middle of a long
//! history is dropped ([`compact::snip`]), old tool results shrink to a
//! placeholder ([`compact::micro`]), and if the history is still over the
//! threshold the model summarises it ([`compact::summary`]). A `compact`
//! tool lets the model ask for the summary itself, and a request refused as
//! too long is compacted and sent once more ([`compact::reactive`]). No
//! layer ever separates a `tool_use` from its `tool_result`. The loop does
//! not change.
//!
//! Start reading at [`compact`](mod@compact): the pipeline and the
//! [`compact::CompactConfig`] thresholds, then each layer's module. Then
//! [`hooks`], where `before_model_call` runs the pipeline and `call_model`
//! adds the reactive retry.

pub mod builtin_hooks;
pub mod compact;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod permission;
pub mod skills;
pub mod subagent;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

use compact::{CompactConfig, Compactor};
pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
pub use skills::SkillsArgs;
use subagent::Subagent;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s08",
    title: "Context compact",
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
    let hooks =
        LessonHooks::new(setup.workspace, approver, subagent, compactor).with_skills(skills);
    Ok(Agent::new(setup.model, setup.model_id, hooks))
}
// ANCHOR_END: build
