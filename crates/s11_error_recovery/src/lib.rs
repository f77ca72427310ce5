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
//! for again with 64,000 tokens of room (or as many as the model can
//! write: a refusal of that limit is remembered, and the cut reply
//! continued instead), then continued up to three times. Every decision
//! prints one `[recovery]` line. The loop does not change.
//!
//! Start reading at [`recovery`](mod@recovery): the diagram, then
//! [`recovery::Recovery::send`]. Then [`recovery::policy`] for the numbers,
//! [`recovery::backoff`] for the waits, [`recovery::truncation`] for
//! what is kept of a cut-off reply and [`recovery::output_cap`] for models
//! that write less than 64,000 tokens. In [`hooks`], `call_model` hands the
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

use compact::CompactConfig;
pub use hooks::LessonHooks;
use permission::{Approver, TerminalApprover};
use recovery::{Recovery, RecoveryPolicy};
pub use skills::SkillsArgs;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s11",
    title: "Error recovery",
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
}

impl Default for Options {
    fn default() -> Self {
        Self {
            approver: Box::new(TerminalApprover),
            skills: SkillsArgs::default(),
            compact: CompactConfig::default(),
            recovery: RecoveryPolicy::default(),
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
