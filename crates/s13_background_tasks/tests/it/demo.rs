//! Lesson 13's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness and real commands. The
//! prompts are typed one at a time, the next only after the agent has
//! answered, because the point of the lesson happens in between: the
//! first build ends while the REPL waits for the user, and its
//! notification starts a turn by itself. The demo runs twice in the same
//! directory, as every demo must be able to.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support;

/// How long the demo may take before the test gives up on it. The demo's
/// own commands sleep about four seconds in all.
const DEADLINE: Duration = Duration::from_secs(120);

/// Reads `lines` until one contains `needle`, and returns everything read.
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
async fn the_demo_hears_from_its_background_work_between_prompts_and_stops_it_at_exit() {
    let dir = tempfile::tempdir().unwrap();
    play(dir.path()).await;
    play(dir.path()).await;
}

/// Runs the demo in `dir`, checking what it shows.
async fn play(dir: &std::path::Path) {
    let mut child = support::binary(dir).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = String::new();

    stdin
        .write_all(b"Run the build in the background and, while it runs, list the files here\n")
        .await
        .unwrap();
    read_until(&mut stdout, "I will report when the build ends", &mut seen).await;
    // Nobody types: the build's notification starts the next turn.
    read_until(&mut stdout, "bg_0001 has ended", &mut seen).await;

    stdin
        .write_all(
            b"Run the unit tests and the linter in the background, and check the disk meanwhile\n",
        )
        .await
        .unwrap();
    read_until(&mut stdout, "Both background jobs ended", &mut seen).await;

    stdin
        .write_all(b"Start a long job, then quit\n")
        .await
        .unwrap();
    read_until(&mut stdout, "It runs as bg_0004", &mut seen).await;
    drop(stdin);

    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the demo exits at end of input")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{seen}\n{stderr}");
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // What the harness said, not what the script says.
    for notice in [
        "[background] bg_0001 started: sleep 2",
        "[background] bg_0001 completed",
        "[background] bg_0002 completed",
        "[background] bg_0003 completed",
        "[background] bg_0004 was still running at exit and was stopped: sleep 300",
    ] {
        assert!(stderr.contains(notice), "{notice}\n{stderr}");
    }
    assert!(
        seen.contains("[Background task bg_0001 started]"),
        "the call was answered at once: {seen}"
    );
}
