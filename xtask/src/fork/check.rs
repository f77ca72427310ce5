//! `cargo xtask fork-check`: a fork that is proven to work, not only to be
//! well formed.
//!
//! `xtask/tests/it/fork.rs` forks every lesson and proves, without
//! building, that each fork refers to nothing outside itself and that its
//! trimmed lock resolves offline. This command does what a student does
//! next, for one lesson (the newest by default, under a new name): forks
//! it, runs `cargo test --offline --locked` in the fork, runs the fork's
//! binary with its demo model, and checks that the build did not rewrite
//! the lock.
//!
//! It is a command, run by CI after `cargo test` (`.ci/run`), rather than
//! a test, because of what a build costs. The fork builds into the
//! workspace's own target directory, so every dependency the workspace
//! already compiled with the same features and profile is reused (for the
//! newest lesson that is all of them but a handful of small crates whose
//! features only `xtask` turns on): a cold build of the fork's dependencies
//! in a directory of its own took longer on CI's two cores than the rest
//! of the test suite's build. A test cannot do that: it runs inside a
//! `cargo test`, which may hold the lock on that directory, while this
//! command runs after `cargo run` has let go of it.
//!
//! The fork is written to a temporary directory, as a user would, then
//! synced into `target/fork-check/NAME` file by file, rewriting only what
//! changed: Cargo decides what to rebuild by modification times, so a
//! second run compiles nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::LESSON_PARENT;
use crate::lessons::{self, Lesson};

/// What the check did, for the command to report.
#[derive(Debug)]
pub struct Checked {
    /// Where the fork was built.
    pub dir: PathBuf,
    /// The lines of the demo's first reply found on its standard output.
    pub demo_reply: Vec<String>,
}

// ANCHOR: fork_check
/// Forks `lesson` as `name`, builds and tests the fork offline with the
/// workspace's target directory `target_dir`, and runs its demo.
pub fn check(root: &Path, lesson: &Lesson, name: &str, target_dir: &Path) -> Result<Checked> {
    let temp = tempfile::tempdir().context("creating a temporary directory")?;
    let fresh = temp.path().join("fork");
    // Offline: the workspace's build has filled the registry cache with
    // every package a lesson uses.
    let forked = super::fork(root, lesson, &fresh, Some(name), true)?;
    install_npm_packages(root, &fresh)?;
    let dir = target_dir.join("fork-check").join(name);
    sync(&fresh, &dir)?;
    keep_apart(&dir, &forked.packages, FORK_CHECK_UNITS)?;
    let lock_before = read(&dir.join("Cargo.lock"))?;

    // One build: `cargo test` builds the binary too, for the tests that run
    // it. A separate `cargo build` would build most dependencies again,
    // with the features of a normal build (the tests' dev-dependencies turn
    // on more, tokio's test-util and shared's testing among them).
    let status = cargo(&dir, target_dir)
        .args(["test", "--offline", "--locked"])
        .status()
        .context("running cargo test in the fork")?;
    if !status.success() {
        bail!("cargo test in the fork {} failed ({status})", dir.display());
    }

    let demo_reply = run_demo(&dir, name, target_dir, temp.path())?;
    if read(&dir.join("Cargo.lock"))? != lock_before {
        bail!("building the fork rewrote its trimmed Cargo.lock");
    }
    Ok(Checked { dir, demo_reply })
}
// ANCHOR_END: fork_check

/// The `codegen-units` that mark the crates `fork-check` builds (see
/// [`keep_apart`]); the exercises use another number.
const FORK_CHECK_UNITS: u32 = 255;

/// Gives the fork in `dir` builds of its own crates in the target
/// directory it shares with the course, by writing a `.cargo/config.toml`
/// beside it that sets `codegen-units = units` for each of its `packages`
/// ([`super::Forked::packages`]).
///
/// Why: Cargo names the build of a workspace member after its path
/// relative to the workspace root, so the fork's `shared` and the
/// course's (or another fork's) are one build to Cargo, and whoever built
/// it last decides whether it is fresh: a fork under `target/` records its
/// sources by their path in `target/`, so the next builder checks the
/// modification times of someone else's files. The course's tests could
/// then run against an exercise's stubbed `shared`, or a fork against an
/// older one. A profile setting differs in every unit's hash (and so in
/// every crate built on it) while changing nothing that matters for a
/// debug build; the registry's crates, which are the cost, stay shared.
pub fn keep_apart(dir: &Path, packages: &[String], units: u32) -> Result<()> {
    let mut config = String::from(
        "# Written by `cargo xtask` (keep_apart in xtask/src/fork/check.rs): the\n\
         # fork's crates get builds of their own in the target directory it\n\
         # shares with the course.\n",
    );
    for name in packages {
        config.push_str(&format!(
            "\n[profile.dev.package.{name}]\ncodegen-units = {units}\n"
        ));
    }
    let Some(parent) = dir.parent() else {
        bail!("{} has no parent directory", dir.display());
    };
    let file = parent.join(".cargo").join("config.toml");
    std::fs::create_dir_all(parent.join(".cargo"))?;
    // Written only when it changes, like the fork (see `sync`).
    if std::fs::read_to_string(&file).ok().as_deref() != Some(config.as_str()) {
        std::fs::write(&file, config).with_context(|| format!("writing {}", file.display()))?;
    }
    Ok(())
}

/// `cargo` in `dir`, building into `target_dir`, with nothing the outer
/// `cargo run` exported to steer it.
pub(crate) fn cargo(dir: &Path, target_dir: &Path) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(dir).env("CARGO_TARGET_DIR", target_dir);
    // `cargo run` hands xtask the variables of the package it ran
    // (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, …). Build scripts watch some of
    // them (ring's runs again when CARGO_PKG_NAME changes), so passing them
    // on would rebuild what the workspace's build left fresh, and with it
    // every crate above.
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        let from_cargo_run = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
            || ["CARGO_PRIMARY_PACKAGE", "OUT_DIR", "RUSTC_WRAPPER"].contains(&name.as_ref());
        if from_cargo_run {
            command.env_remove(&key);
        }
    }
    command
}

/// Runs the fork's binary with its demo model in a new working directory
/// under `scratch`, and returns what of the demo script's first reply it
/// printed; fails if the demo fails or any of it is missing.
fn run_demo(fork: &Path, name: &str, target_dir: &Path, scratch: &Path) -> Result<Vec<String>> {
    let workdir = scratch.join("play");
    std::fs::create_dir_all(&workdir)?;
    let binary = target_dir.join("debug").join(name);
    let output = Command::new(&binary)
        .args(["--demo", "--workdir"])
        .arg(&workdir)
        .args(["-p", "show me what you can do"])
        // As the fork's user would start it, not from inside cargo (lesson
        // 18's demo looks for the course's MCP server through
        // CARGO_MANIFEST_DIR).
        .env_remove("CARGO_MANIFEST_DIR")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "the fork's demo failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let expected = first_demo_reply(&read(
        &fork.join(LESSON_PARENT).join(name).join("demo.json"),
    )?)?;
    if let Some(missing) = expected.iter().find(|line| !stdout.contains(line.as_str())) {
        bail!("the demo's first reply is missing ({missing:?}):\n{stdout}");
    }
    Ok(expected)
}

/// What the terminal must show of a demo script's first reply: the start
/// of its text and `> NAME` for its first tool call, if it makes one.
pub fn first_demo_reply(demo_json: &str) -> Result<Vec<String>> {
    let script: serde_json::Value =
        serde_json::from_str(demo_json).context("demo.json is not JSON")?;
    let first = &script["replies"][0];
    let mut expected = Vec::new();
    if let Some(text) = first["text"].as_str().filter(|text| !text.is_empty()) {
        let line = text.lines().next().unwrap_or(text);
        expected.push(line.chars().take(40).collect());
    }
    if let Some(name) = first["tool_calls"][0]["name"].as_str() {
        expected.push(format!("> {name}"));
    }
    if expected.is_empty() {
        bail!("demo.json's first reply has neither text nor a tool call");
    }
    Ok(expected)
}

/// Gives the fork the npm packages its tests connect to, as a user would
/// after `npm ci`: a copy of those the course has installed (CI runs `npm
/// ci` first). The fork command itself never copies `node_modules`.
pub(crate) fn install_npm_packages(root: &Path, fork: &Path) -> Result<()> {
    for file in lessons::all_files(fork)? {
        if file.file_name().is_none_or(|name| name != "package.json") {
            continue;
        }
        let Some(dir) = file.parent().and_then(|dir| dir.strip_prefix(fork).ok()) else {
            continue;
        };
        let installed = root.join(dir).join("node_modules");
        if !installed.is_dir() {
            continue;
        }
        for from in lessons::all_files(&installed)? {
            let relative = from.strip_prefix(&installed)?;
            let to = fork.join(dir).join("node_modules").join(relative);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} into the fork", from.display()))?;
        }
    }
    Ok(())
}

/// Makes `to` hold exactly the files of `from`, writing only those whose
/// bytes differ, so their modification times say what changed.
pub fn sync(from: &Path, to: &Path) -> Result<()> {
    let wanted: Vec<PathBuf> = lessons::all_files(from)?
        .iter()
        .filter_map(|file| file.strip_prefix(from).ok().map(Path::to_path_buf))
        .collect();
    if to.is_dir() {
        for old in lessons::all_files(to)? {
            let relative = old.strip_prefix(to)?.to_path_buf();
            if !wanted.contains(&relative) {
                std::fs::remove_file(&old)
                    .with_context(|| format!("removing {}", old.display()))?;
            }
        }
    }
    for relative in wanted {
        let bytes = std::fs::read(from.join(&relative))?;
        let target = to.join(&relative);
        if std::fs::read(&target).ok().as_ref() != Some(&bytes) {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&target, bytes)
                .with_context(|| format!("writing {}", target.display()))?;
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}
