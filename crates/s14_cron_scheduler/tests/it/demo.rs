//! Lesson 14's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness. The scheduler's clock is
//! started a few seconds before a minute mark (`--pretend-now`), so the
//! job the first prompt schedules comes due almost at once; from there on
//! the clock runs at real speed, and the scheduled turn starts with nobody
//! typing. The demo runs twice in the same directory, as every demo must be
//! able to.

use std::path::Path;
use std::time::Duration;

use lesson::cron::CronJob;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support;

/// How long the demo may take before the test gives up on it.
const DEADLINE: Duration = Duration::from_secs(150);

/// Five seconds before 10:00 in UTC+1.
const PRETEND_NOW: &str = "2026-12-01T09:59:55+01:00[+01:00]";

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

/// The durable jobs on disk.
fn saved(dir: &Path) -> Vec<CronJob> {
    serde_json::from_str(&std::fs::read_to_string(dir.join(".scheduled_tasks.json")).unwrap())
        .unwrap()
}

#[tokio::test]
async fn the_demo_schedules_a_job_hears_it_fire_unprompted_and_cancels_it() {
    let dir = tempfile::tempdir().unwrap();
    play(dir.path()).await;
    play(dir.path()).await;
}

/// Runs the demo in `dir`, checking what it shows and leaves.
async fn play(dir: &Path) {
    let mut child = support::binary(dir)
        .args(["--pretend-now", PRETEND_NOW])
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = String::new();

    stdin
        .write_all(b"Schedule a job that prints the date every minute, and list the jobs\n")
        .await
        .unwrap();
    read_until(&mut stdout, "It fires at the next minute mark", &mut seen).await;
    assert!(
        seen.contains(
            "Scheduled cron_0001 '* * * * *' (recurring, durable), next 2026-12-01T10:00:00+01:00"
        ),
        "{seen}"
    );
    let on_disk = saved(dir);
    assert_eq!(on_disk.len(), 1);
    assert_eq!(on_disk[0].id, "cron_0001");

    // Nobody types: the scheduler starts the next turn.
    read_until(
        &mut stdout,
        "That turn was started by the scheduler",
        &mut seen,
    )
    .await;

    stdin
        .write_all(b"Cancel the job and list the jobs again\n")
        .await
        .unwrap();
    read_until(&mut stdout, "no jobs are left", &mut seen).await;
    drop(stdin);

    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the demo exits at end of input")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{seen}\n{stderr}");
    // What the harness said, not what the script says.
    for notice in [
        "[cron] scheduled cron_0001: * * * * *",
        "[cron] cron_0001 fired: Print the current date and time with the date command.",
        "[cron] cancelled cron_0001",
    ] {
        assert!(stderr.contains(notice), "{notice}\n{stderr}");
    }
    assert!(seen.contains("No cron jobs are scheduled."), "{seen}");
    assert!(saved(dir).is_empty(), "the cancelled job left the file");
}
