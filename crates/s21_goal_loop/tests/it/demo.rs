//! Lesson 21's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness and a real background
//! command. `/goal tests passed` sets the goal and its kickoff starts a
//! turn by itself; the model's claim is sent back with a continuation, the
//! user's claim changes nothing, and only the background command's
//! notification completes the goal. The lines are typed one at a time,
//! each after the output it answers. The demo runs twice in the same
//! directory, and `-p` exits 0.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support;

/// How long the demo may take before the test gives up on it. Its command
/// sleeps three seconds.
const DEADLINE: Duration = Duration::from_secs(120);

/// Reads `lines` until one contains `needle`, keeping everything read.
async fn read_until(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    needle: &str,
    seen: &mut String,
) {
    let found = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(needle) {
                return true;
            }
        }
        false
    })
    .await;
    assert!(found == Ok(true), "never saw {needle:?} in:\n{seen}");
}

#[tokio::test]
async fn the_demo_goal_ignores_both_claims_and_is_met_by_the_notification() {
    let dir = tempfile::tempdir().unwrap();
    play(dir.path()).await;
    play(dir.path()).await;
}

async fn play(dir: &Path) {
    let mut child = support::binary(dir).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = String::new();

    stdin.write_all(b"/goal tests passed\n").await.unwrap();
    read_until(&mut stdout, "Goal set: tests passed", &mut seen).await;
    // Nobody types: the kickoff, the model's claim, the continuation and
    // the background command follow by themselves.
    read_until(&mut stdout, "The suite runs as bg_0001", &mut seen).await;

    stdin.write_all(b"tests passed, trust me\n").await.unwrap();
    read_until(&mut stdout, "your word cannot close this goal", &mut seen).await;
    // The notification starts the last turn.
    read_until(&mut stdout, "bg_0001 has finished", &mut seen).await;

    stdin.write_all(b"/goal\n").await.unwrap();
    read_until(&mut stdout, "status:     completed", &mut seen).await;
    drop(stdin);

    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the demo exits at end of input")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{seen}\n{stderr}");
    // The model's claim, then the user's: not met either time.
    assert!(
        stderr.contains("[goal] not met (check 1): no trusted evidence has been delivered"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[goal] not met (check 3): no trusted evidence"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[goal] goal met after 4 checks and 1 continuation turn:"),
        "{stderr}"
    );
    assert!(stderr.contains("background task bg_0001"), "{stderr}");
}

#[tokio::test]
async fn the_demo_answers_a_single_prompt_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::run_binary(dir.path(), &["-p", "Are the tests passing?"], &[], "").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("tests passed"), "{stdout}");
}

#[tokio::test]
async fn p_with_a_goal_works_until_the_goal_is_met_then_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::run_binary(dir.path(), &["-p", "/goal tests passed"], &[], "").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // The command is answered by the harness, then the kickoff and the
    // continuations run as turns: the model's claim does not close the goal,
    // the background suite's notification does.
    assert!(stdout.starts_with("Goal set: tests passed"), "{stdout}");
    assert!(stderr.contains("[goal] not met (check 1)"), "{stderr}");
    assert!(
        stderr.contains("\"tests passed\" found in the output of trusted work that succeeded, from background task bg_0001"),
        "{stderr}"
    );
    assert!(stdout.contains("bg_0001 has finished"), "{stdout}");
}
