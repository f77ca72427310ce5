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

use compact::CompactConfig;
pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
pub use skills::SkillsArgs;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s08",
    title: "Context compact",
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
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
            skills: SkillsArgs::default(),
            compact: CompactConfig::default(),
        }
    }
}

/// Builds the agent: the shared loop plus this lesson's hooks, asking
/// `options.approver` before risky calls, with the skills `options.skills`
/// finds, compacting by `options.compact`.
pub fn build(setup: Setup, options: Options) -> anyhow::Result<Agent<LessonHooks>> {
    let hooks = LessonHooks::new(&setup, options)?;
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
