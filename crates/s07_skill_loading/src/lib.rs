//! # Lesson 7: skill loading
//!
//! Knowledge the agent needs only sometimes — how to review code, how to
//! build an MCP server — should not ride along in every request. This
//! lesson keeps it in skills: folders with a `SKILL.md`. The system prompt
//! carries only a catalog, one line per skill; the model calls the new
//! `load_skill` tool to get a skill's full text when a task calls for it,
//! and that text arrives as a tool result. The loop does not change.
//!
//! Start reading at [`skills`]: [`skills::discovery`] finds the directory,
//! [`skills::frontmatter`] and [`skills::registry`] read it once at
//! start-up, [`skills::tool`] serves `load_skill`. Then [`hooks`], where the
//! catalog joins the system prompt and the tool joins the dispatch map.

pub mod builtin_hooks;
pub mod dispatch;
pub mod hook_registry;
pub mod hooks;
pub mod permission;
pub mod skills;
pub mod subagent;
pub mod todo;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
pub use skills::SkillsArgs;
use subagent::Subagent;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s07",
    title: "Skill loading",
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
    let hooks = LessonHooks::new(setup.workspace, approver, subagent).with_skills(skills);
    Ok(Agent::new(setup.model, setup.model_id, hooks))
}
// ANCHOR_END: build
