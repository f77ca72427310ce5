//! The project's own tasks, run as `cargo xtask …` (an alias in
//! `.cargo/config.toml`):
//!
//! - `diff`: what one lesson crate changed against another;
//! - `carry`: a fix made in one lesson, applied to every later lesson by a
//!   three-way merge (see [`carry`]);
//! - `docs`: regenerate the book's generated pages and build the book;
//! - `check`: the book and the lessons agree, and the translations are
//!   current (also run by `tests/it/book.rs`, so `cargo test --workspace`
//!   catches the same problems);
//! - `translation`: the state of each translated page, and `stamp` to
//!   record that one was brought up to date with its English source;
//! - `fork`: one lesson as a standalone Cargo project, outside the course;
//!   `fork::check` builds, tests and runs one such fork (`cargo xtask fork-check`);
//!   with `--exercise`, the lesson's mechanism is left for the student
//!   (see [`exercise`]; `cargo xtask exercise-check` proves each exercise).
//!
//! It is a library as well as a binary so that the checks run from a test.

pub mod carry;
pub mod check;
pub mod circles;
pub mod claims;
pub mod diff;
pub mod docs;
pub mod error_types;
pub mod exercise;
pub mod flags;
pub mod fork;
pub mod i18n;
pub mod lessons;
pub mod manifest;
pub mod markdown;
pub mod pages;
pub mod problem;
pub mod rust_items;
pub mod shell;
pub mod terms;
pub mod tools;

use std::path::PathBuf;

/// The repository root: the directory above this crate.
pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
