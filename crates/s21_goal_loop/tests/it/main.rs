//! Lesson 21's tests (the goal loop), in one test binary.
//!
//! One module per mechanism, each byte-identical in every later lesson
//! (`cargo xtask check` holds them to that), so a fix to a mechanism's
//! tests is made where the mechanism was introduced and copied forward.
//! `support` is this lesson's wiring and `demo` runs its demo; this file is
//! the only one that names the crate.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

extern crate s21_goal_loop as lesson;

/// The lesson's binary, built by cargo for these tests.
const BIN: &str = env!("CARGO_BIN_EXE_s21_goal_loop");

mod demo;
mod support;

mod agent_loop;
mod autonomy;
mod background;
mod compaction;
mod cron;
mod cron_tools;
mod dispatch;
mod goal;
mod hooks;
mod invariants;
mod isolation;
mod layers;
mod long_session;
mod mcp;
mod mcp_http;
mod memory;
mod memory_store;
mod offered_tools;
mod permission;
mod prompt_cache;
mod recovery;
mod repl;
mod settings;
mod skills;
mod skills_cli;
mod subagent;
mod system_prompt;
mod tasks;
mod team;
mod team_bus;
mod todo;
mod workflow;
mod workflow_script;
mod worktrees;
