//! # Lesson 1: the agent loop
//!
//! A model can only write text. This lesson turns it into an agent with one
//! loop and one tool: when the model asks for `bash`, the harness runs the
//! command and sends the output back, and the model decides what to do next.
//!
//! The loop itself lives in `shared::agent` (every lesson runs it
//! unchanged); read it first. Then read [`hooks`], which is all this lesson
//! adds: the system prompt, the one tool the model may call, and how that
//! call is run.

pub mod hooks;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s01",
    title: "The agent loop",
    demo_script: include_str!("../demo.json"),
    demo_model: shared::model::scripted::demo_model,
};

/// What a caller may choose about the agent besides the [`Setup`]. Lesson
/// 1 has nothing to choose yet; later lessons add a field for each choice
/// (an approver, a skills directory, thresholds), always with a default, so
/// `Options::default()` builds the lesson as its binary runs it.
#[derive(Default)]
pub struct Options {}

/// Builds the agent: the shared loop plus this lesson's hooks.
pub fn build(setup: Setup, _options: Options) -> anyhow::Result<Agent<LessonHooks>> {
    let hooks = LessonHooks::new(setup.workspace().clone());
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
