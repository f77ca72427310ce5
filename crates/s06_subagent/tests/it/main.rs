//! Lesson 6's tests (subagents), in one test binary.
//!
//! One module per mechanism, each byte-identical in every later lesson
//! (`cargo xtask check` holds them to that), so a fix to a mechanism's
//! tests is made where the mechanism was introduced and copied forward.
//! `support` is this lesson's wiring and `demo` runs its demo; this file is
//! the only one that names the crate.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

extern crate s06_subagent as lesson;

/// The lesson's binary, built by cargo for these tests.
const BIN: &str = env!("CARGO_BIN_EXE_s06_subagent");

mod demo;
mod support;

mod agent_loop;
mod dispatch;
mod hooks;
mod offered_tools;
mod permission;
mod repl;
mod subagent;
mod todo;
