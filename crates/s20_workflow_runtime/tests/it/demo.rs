//! Lesson 20's demo, as the chapter runs it: the demo model plays
//! `demo.json` against the real harness with `-p`. The main agent makes a
//! small git project with an uncommitted change and starts
//! `review-changes` on it; five workflow agents (scripted per label, with
//! real tool calls) audit and verify; `-p` waits for the run, hands its
//! notification to the model, and exits 0 once the model has answered it.

use std::path::Path;

use serde_json::Value;

use crate::support;

#[tokio::test]
async fn the_demo_reviews_a_change_in_the_background_and_p_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::run_binary(
        dir.path(),
        &["--demo", "-p", "Review my uncommitted changes"],
        &[],
        "",
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // The tool answered at once; the model's answer to the notification
    // came after the run, in the same `-p` invocation.
    assert!(
        stdout.contains("started in the background as run wf-review-changes-"),
        "{stdout}"
    );
    assert!(stdout.contains("The review is done."), "{stdout}");
    // Progress and the run's end, on standard error (not a terminal: plain
    // lines).
    for expected in [
        "review-changes: phase Review",
        "review-changes: phase Verify",
        "2 of 3 findings confirmed",
        "completed: 5 agents run, 0 cached, 0 tokens; output in .runtime/",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?}:\n{stderr}");
    }
    assert!(stderr.contains("· finished"), "{stderr}");
    // The agents' tool calls passed the session's hooks.
    assert!(stderr.contains("PreToolUse: bash(git diff)"), "{stderr}");
    let (snapshot, result) = run_files(dir.path());
    assert_eq!(snapshot["status"], "completed");
    assert_eq!(snapshot["agents_run"], 5);
    let confirmed = result["confirmed"].as_array().unwrap();
    let severities: Vec<&str> = confirmed
        .iter()
        .map(|finding| finding["severity"].as_str().unwrap())
        .collect();
    assert_eq!(severities, ["critical", "high"]);
    assert_eq!(result["findings"], 3);
}

/// The one run's snapshot and output in `dir`.
fn run_files(dir: &Path) -> (Value, Value) {
    let runtime = dir.join(".runtime");
    let mut snapshot = None;
    let mut output = None;
    for entry in std::fs::read_dir(&runtime).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let value = || serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap());
        if name.ends_with(".output.json") {
            output = Some(value().unwrap());
        } else if name.ends_with(".json") {
            assert!(snapshot.is_none(), "one run only");
            snapshot = Some(value().unwrap());
        }
    }
    (snapshot.unwrap(), output.unwrap())
}
