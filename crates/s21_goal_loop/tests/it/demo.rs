//! Lesson 19's demo, as the chapter runs it: the demo model plays
//! `demo.json` against the real harness, configured by the course's
//! example settings file. `/status` is answered by the harness; then one
//! request whose calls meet the file's allow and deny rules, its
//! PreToolUse hook (a real shell command that blocks a force push), an ask
//! rule nobody can answer, and its PostToolUse hook, which logs the edit.
//! The demo runs twice in the same directory.

use std::path::{Path, PathBuf};

use crate::support;

fn example_settings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/settings/settings.toml")
}

#[tokio::test]
async fn the_demo_meets_every_kind_of_setting_and_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    play(dir.path(), 1).await;
    play(dir.path(), 2).await;
}

async fn play(dir: &Path, round: usize) {
    let settings = example_settings();
    let output = support::run_binary(
        dir,
        &["--demo", "--settings", settings.to_str().unwrap()],
        &[],
        "/status\nTidy up this project: check its state, fetch the style guide, and note what you did\n",
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // `/status`, answered without the model.
    assert!(
        stdout.contains(&format!("settings:    {}", settings.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("permissions: 4 deny, 2 ask, 5 allow"),
        "{stdout}"
    );
    // The rules and the hooks, each at its place.
    for expected in [
        "the settings rule deny Bash(curl:*)",
        "the settings rule deny Read(*.env)",
        "blocked: no force pushes here",
        "Settings rule ask Write(*.md)",
    ] {
        assert!(
            stdout.contains(expected) || stderr.contains(expected),
            "missing {expected:?}:\n{stdout}\n{stderr}"
        );
    }
    assert!(
        !dir.join("NOTES.md").exists(),
        "nobody approved the .md file"
    );
    assert!(dir.join("notes.txt").exists());
    let log = std::fs::read_to_string(dir.join(".agent/edits.jsonl")).unwrap();
    let edits: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(edits.len(), round, "one logged edit per run: {log}");
    assert_eq!(edits[round - 1]["tool_input"]["path"], "notes.txt");
    assert_eq!(edits[round - 1]["hook_event_name"], "PostToolUse");
}
