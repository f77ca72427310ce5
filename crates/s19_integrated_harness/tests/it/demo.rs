//! Lesson 17's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness and real git, with `--yes`
//! standing in for the user confirming each teammate. The demo makes the
//! scratch directory a repository, binds two tasks to two worktrees, and
//! two teammates each write and commit `config.py` in theirs; the main
//! checkout never gets one. The demo runs twice in the same directory.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support;

const DEADLINE: Duration = Duration::from_secs(120);

/// Reads `lines` until each of `needles` has appeared, in any order.
async fn read_until_all(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    needles: &[&str],
    seen: &mut String,
) {
    let found = tokio::time::timeout(DEADLINE, async {
        let mut missing: Vec<&str> = needles.to_vec();
        missing.retain(|needle| !seen.contains(needle));
        while !missing.is_empty() {
            let Some(line) = lines.next_line().await.unwrap() else {
                return false;
            };
            seen.push_str(&line);
            seen.push('\n');
            missing.retain(|needle| !line.contains(needle));
        }
        true
    })
    .await;
    assert!(
        found == Ok(true),
        "never saw all of {needles:?} in:\n{seen}"
    );
}

#[tokio::test]
async fn the_demo_team_works_in_two_worktrees_and_the_main_checkout_stays_clean() {
    let dir = tempfile::tempdir().unwrap();
    play(dir.path()).await;
    play(dir.path()).await;
}

async fn play(dir: &Path) {
    let mut child = support::binary(dir).arg("--yes").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();

    stdin
        .write_all(b"Refactor the authentication module and the login page in parallel without the changes interfering\n")
        .await
        .unwrap();
    stdin.write_all(b"Go ahead\n").await.unwrap();
    read_until_all(
        &mut stderr,
        &[
            "[worktree] created auth at .worktrees/auth, branch wt/auth, task 1",
            "[worktree] created ui at .worktrees/ui, branch wt/ui, task 2",
            "[tasks] completed 1:",
            "[tasks] completed 2:",
        ],
        &mut seen,
    )
    .await;
    assert!(dir.join(".worktrees/auth/config.py").exists());
    assert!(dir.join(".worktrees/ui/config.py").exists());
    assert!(
        !dir.join("config.py").exists(),
        "the main checkout is untouched"
    );

    stdin.write_all(b"Show the worktrees\n").await.unwrap();
    read_until_all(
        &mut stderr,
        &["[hook] PostToolUse: list_worktrees"],
        &mut seen,
    )
    .await;
    stdin
        .write_all(b"Clean up and stop the team\n")
        .await
        .unwrap();
    read_until_all(
        &mut stderr,
        &[
            "[worktree] removed the worktree `auth` and its branch wt/auth",
            "[worktree] removed the worktree `ui` and its branch wt/ui",
            "alice accepted shutdown",
            "bob accepted shutdown",
        ],
        &mut seen,
    )
    .await;
    drop(stdin);
    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the demo exits at end of input")
        .unwrap();
    assert!(output.status.success(), "{seen}");
    assert!(!dir.join(".worktrees/auth").exists());
    assert!(!dir.join("config.py").exists());
}
