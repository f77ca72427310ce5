//! # Lesson 2: tool use
//!
//! With only `bash`, the model must spell every file operation as a shell
//! command. This lesson gives it five proper tools — `bash`, `read_file`,
//! `write_file`, `edit_file`, `glob` — and a dispatch map that routes each
//! call to its handler by name. The loop does not change.
//!
//! Start reading at [`dispatch`]: adding a tool is one spec and one handler.
//! Then [`hooks`], where the loop asks the map for specs and results.

pub mod dispatch;
pub mod hooks;

use shared::agent::Agent;
use shared::cli::{Lesson, Setup};

pub use hooks::LessonHooks;

// ANCHOR: build
/// How the terminal front end presents this lesson.
pub const LESSON: Lesson = Lesson {
    id: "s02",
    title: "Tool use",
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
    let hooks = LessonHooks::new(setup.workspace().clone(), setup.notices().clone());
    Ok(setup.agent(hooks))
}
// ANCHOR_END: build
