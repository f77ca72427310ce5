//! Lesson 15's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` — the lead's part and each teammate's — against the
//! real harness, with `--yes` standing in for the user confirming each
//! teammate. The prompts are typed one at a time, each when what it
//! answers has happened, because the team's events start the lead's turns
//! by themselves in between. The demo runs twice in the same directory.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support;

/// How long the demo may take before the test gives up on it.
const DEADLINE: Duration = Duration::from_secs(120);

/// Reads `lines` until each of `needles` has appeared in some line, in
/// any order (agents run at the same time), keeping everything read.
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
async fn the_demo_team_reviews_in_parallel_plans_first_and_shuts_down() {
    let dir = tempfile::tempdir().unwrap();
    play(dir.path()).await;
    play(dir.path()).await;
}

/// Runs the demo in `dir`, checking what it shows and leaves.
async fn play(dir: &Path) {
    let mut child = support::binary(dir).arg("--yes").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();

    stdin
        .write_all(b"Review this backend: configuration loading and authentication\n")
        .await
        .unwrap();
    stdin.write_all(b"Go ahead\n").await.unwrap();
    // auth tries to write before planning, is blocked, and sends a plan.
    read_until_all(
        &mut stderr,
        &[
            "[team] config spawned (configuration loading)",
            "[team] auth spawned (authentication)",
            "[auth]   error: Blocked: plan status is required",
            "[bus] auth → lead (plan_approval_request) req_0001",
        ],
        &mut seen,
    )
    .await;
    stdin.write_all(b"Approve auth's plan\n").await.unwrap();
    // With nobody typing, both teammates finish and report.
    read_until_all(
        &mut stderr,
        &[
            "[bus] config → lead (result): Configuration reviewed",
            "[bus] auth → lead (result): Authentication reviewed",
        ],
        &mut seen,
    )
    .await;
    stdin
        .write_all(b"Ask everyone to shut down\n")
        .await
        .unwrap();
    read_until_all(
        &mut stderr,
        &[
            "config accepted shutdown req_0002",
            "auth accepted shutdown req_0003",
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
    assert!(
        std::fs::read_to_string(dir.join("notes/auth.md"))
            .unwrap()
            .starts_with("# Authentication"),
        "the gated write did not land, the approved one did"
    );
    assert!(dir.join("notes/config.md").exists());
}
