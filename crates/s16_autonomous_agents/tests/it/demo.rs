//! Lesson 16's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness, with `--yes` standing in
//! for the user confirming each teammate. The lead puts four tasks on the
//! board and starts two teammates; with nobody assigning anything, they
//! claim and complete all four in dependency order. The demo runs twice in
//! the same directory.

use std::path::Path;
use std::time::Duration;

use lesson::tasks::{Status, TASKS_DIR, TaskBoard};
use shared::notice::Notices;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support;

/// How long the demo may take before the test gives up on it.
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
async fn the_demo_team_works_through_the_board_by_itself() {
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
        .write_all(b"Put the backend work on a task board and work through it with a team\n")
        .await
        .unwrap();
    stdin.write_all(b"Go ahead\n").await.unwrap();
    read_until_all(
        &mut stderr,
        &[
            "[team] alice spawned",
            "[team] bob spawned",
            "[tasks] completed 1: setup database schema",
            "[tasks] completed 2: create API endpoints",
            "[tasks] completed 3: write tests",
            "[tasks] completed 4: write docs",
        ],
        &mut seen,
    )
    .await;
    stdin.write_all(b"List the tasks\n").await.unwrap();
    read_until_all(&mut stderr, &["[hook] PostToolUse: list_tasks"], &mut seen).await;
    stdin
        .write_all(b"Ask everyone to shut down\n")
        .await
        .unwrap();
    read_until_all(
        &mut stderr,
        &["alice accepted shutdown", "bob accepted shutdown"],
        &mut seen,
    )
    .await;
    drop(stdin);
    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the demo exits at end of input")
        .unwrap();
    assert!(output.status.success(), "{seen}");
    // The board on disk: every task done by one of the two teammates.
    let tasks = TaskBoard::new(dir.join(TASKS_DIR), Notices::new()).list();
    assert_eq!(tasks.len(), 4);
    for task in tasks {
        assert_eq!(task.status, Status::Completed, "{task:?}");
        assert!(
            matches!(task.owner.as_deref(), Some("alice" | "bob")),
            "{task:?}"
        );
    }
}
