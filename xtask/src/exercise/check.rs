//! `cargo xtask exercise-check [sNN…|--all]`: each exercise forked and
//! proven to work as a student meets it.
//!
//! For each lesson: `fork --exercise` into a temporary directory (offline:
//! the workspace's build filled the registry cache), synced into
//! `target/exercise-check/fork` (one folder for every lesson, so the
//! fork's `shared` keeps its path and is compiled once, and file by file,
//! so Cargo rebuilds only what changed), then, building into the
//! workspace's target directory as [`crate::fork::check`] does:
//!
//! 1. `cargo test --no-run --offline --locked`: the stubbed fork builds;
//! 2. `cargo grade` fails (the stubs are reached), and at least half of
//!    the lesson's own graded tests fail with it;
//! 3. with more than one region, each region alone is stubbed (the others
//!    solved) and `grade` must fail: a region no graded test reaches is
//!    named;
//! 4. `cargo solution --apply`, then `grade` passes;
//! 5. the builds left the fork's lock as it was written.
//!
//! No clippy inside the forks: the lessons' code is clippy-checked in the
//! workspace, and the stubs are a comment, `let _ = …` and `todo!()`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::fork::check::{cargo, install_npm_packages, keep_apart, sync};
use crate::lessons::Lesson;

/// The `codegen-units` that mark the crates the exercises build, apart
/// from the course's and `fork-check`'s (see [`keep_apart`]).
const EXERCISE_CHECK_UNITS: u32 = 254;

/// What one lesson's check found.
#[derive(Debug)]
pub struct Checked {
    /// `s03`.
    pub lesson: String,
    /// The regions, each proven reached by a graded test.
    pub regions: Vec<String>,
    /// `grade`'s last line on the stubbed fork.
    pub stubbed: String,
    /// `grade`'s last line once solved.
    pub solved: String,
    pub took: Duration,
}

/// Checks the exercise of `lesson`, building into `target_dir`.
pub fn check(root: &Path, lesson: &Lesson, target_dir: &Path) -> Result<Checked> {
    let started = Instant::now();
    let temp = tempfile::tempdir().context("creating a temporary directory")?;
    let fresh = temp.path().join("fork");
    let forked = crate::fork::fork_with(root, lesson, &fresh, None, true, true)?;
    let dir = target_dir.join("exercise-check").join("fork");
    // The reference MCP servers s18+ test against, as fork-check gives them.
    install_npm_packages(root, &fresh)?;
    sync(&fresh, &dir)?;
    keep_apart(&dir, &forked.packages, EXERCISE_CHECK_UNITS)?;
    let lock_before = std::fs::read_to_string(dir.join("Cargo.lock"))?;
    let id = lesson.id();

    let build = run(cargo(&dir, target_dir).args(["test", "--no-run", "--offline", "--locked"]))?;
    if !build.status.success() {
        bail!(
            "{id}: the stubbed fork does not build:\n{}",
            String::from_utf8_lossy(&build.stderr)
        );
    }
    let regions: Vec<String> = forked
        .exercise
        .iter()
        .map(|r| r.rsplit(' ').next().unwrap_or(r).to_string())
        .collect();
    let stubbed = grade(&dir, target_dir)?;
    if stubbed.passed {
        bail!(
            "{id}: `cargo grade` passes with every region stubbed ({}): no graded test reaches region {} (add a test for it, or grade the module that has one)",
            stubbed.line,
            regions.join(" or ")
        );
    }
    // The exercise is the lesson's mechanism: with it stubbed, at least
    // half of the lesson's own tests must fail, or most of the grade is
    // earned by code the student never wrote.
    match this_lesson(&stubbed.line) {
        Some((passed, total)) if passed * 2 > total => bail!(
            "{id}: with every region stubbed, {passed} of the lesson's {total} graded tests still pass ({}): the regions ({}) cover too little of the mechanism; at least half must fail",
            stubbed.line,
            regions.join(", ")
        ),
        Some(_) => {}
        None => bail!(
            "{id}: `cargo grade` printed no summary:\n{}",
            stubbed.output
        ),
    }
    if regions.len() > 1 {
        for region in &regions {
            tool(&dir, target_dir, &["solution", "--apply"])?;
            tool(&dir, target_dir, &["reset", region, "--yes"])?;
            let graded = grade(&dir, target_dir)?;
            if graded.passed {
                bail!(
                    "{id}: with only region {region} stubbed, every graded test passes: no graded test reaches {id} {region} (add a test for it, or grade the module that has one)"
                );
            }
        }
    }

    tool(&dir, target_dir, &["solution", "--apply"])?;
    let solved = grade(&dir, target_dir)?;
    if !solved.passed {
        bail!(
            "{id}: with the course's solution applied, `cargo grade` fails:\n{}",
            solved.output
        );
    }
    if std::fs::read_to_string(dir.join("Cargo.lock"))? != lock_before {
        bail!("{id}: building the exercise rewrote its Cargo.lock");
    }
    Ok(Checked {
        lesson: id,
        regions,
        stubbed: stubbed.line,
        solved: solved.line,
        took: started.elapsed(),
    })
}

/// `grade`'s verdict.
struct Graded {
    passed: bool,
    /// Its `grade sNN: this lesson …` line.
    line: String,
    /// Everything it printed.
    output: String,
}

fn grade(dir: &Path, target_dir: &Path) -> Result<Graded> {
    let output = tool(dir, target_dir, &["grade"])?;
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let line = stdout
        .lines()
        .chain(stderr.lines())
        .find(|l| l.starts_with("grade ") && l.contains("this lesson"))
        .unwrap_or("grade printed no summary")
        .to_string();
    Ok(Graded {
        passed: output.status.success(),
        line,
        output: format!("{stdout}{stderr}"),
    })
}

/// `(passed, total)` of a `grade sNN: this lesson 3/9, earlier …` line.
fn this_lesson(line: &str) -> Option<(usize, usize)> {
    let counts = line
        .split("this lesson ")
        .nth(1)?
        .split([',', ' '])
        .next()?;
    let (passed, total) = counts.split_once('/')?;
    Some((passed.parse().ok()?, total.parse().ok()?))
}

/// Runs one of the fork's commands (`cargo grade`, …) offline.
fn tool(dir: &Path, target_dir: &Path, args: &[&str]) -> Result<Output> {
    let output = run(cargo(dir, target_dir)
        .args(["--offline", "--locked"])
        .args(args)
        .env("CARGO_NET_OFFLINE", "true"))?;
    if args[0] != "grade" && !output.status.success() {
        bail!(
            "`cargo {}` in the fork failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}

fn run(command: &mut Command) -> Result<Output> {
    command
        .output()
        .with_context(|| format!("running {command:?}"))
}

/// The workspace's target directory, made whole.
pub fn target_dir(root: &Path) -> Result<PathBuf> {
    let dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(std::path::absolute(dir)?)
}

#[cfg(test)]
mod tests {
    use super::this_lesson;

    #[test]
    fn the_lesson_counts_are_read_from_grade_s_summary() {
        assert_eq!(
            this_lesson("grade s03: this lesson 3/9, earlier 31/31"),
            Some((3, 9))
        );
        assert_eq!(this_lesson("grade s01: this lesson 12/12"), Some((12, 12)));
        assert_eq!(this_lesson("grade printed no summary"), None);
    }
}
