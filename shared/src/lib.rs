//! `shared`: what every lesson of the course stands on.
//!
//! Start reading at [`agent`], the loop that all 21 lessons run unchanged,
//! then [`hooks`], the points where each lesson attaches its mechanism.
//!
//! * [`protocol`]: the Messages API as Rust types.
//! * [`error`]: provider failures, classified once by kind.
//! * [`model`]: the Anthropic client, the OpenAI-compatible client and the
//!   scripted demo model, behind one [`model::Model`] trait.
//! * [`tools`]: the five base tools, confined to the workspace.
//! * [`fs`]: the one atomic, durable write for every file the harness
//!   rewrites whole.
//! * [`history`]: the pairing rules every history must keep.
//! * [`notice`]: one-line reports from the mechanisms to the observer.
//! * [`progress`]: live state reports from work running beside the loop.
//! * [`settings`]: environment overrides, parsed in one place.
//! * [`sync`]: the one rule for a lock a panicking holder poisoned.
//! * [`text`]: truncation that never splits a character.
//! * [`cli`]: the terminal front end (arguments, `.env`, REPL, streaming).
//! * `testing` (feature `testing`, for tests only): a fake HTTP server and a
//!   recording observer.
//!
//! Lessons use this crate as it is; none has a copy of its own. It does
//! change when a mechanism needs more from the ground — a new hook point
//! rather than a change to the loop, or a front-end feature such as lesson
//! 20's progress lines — and then deliberately, for every lesson at once,
//! in a commit of its own that every lesson's tests must pass.

#![warn(missing_docs, unreachable_pub)]

pub mod agent;
pub mod cli;
pub mod error;
pub mod fs;
pub mod history;
pub mod hooks;
pub mod model;
pub mod notice;
pub mod progress;
pub mod protocol;
pub mod settings;
pub mod sync;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;
pub mod tools;

pub use tokio_util::sync::CancellationToken;
