//! Lesson 12's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness, with the chapter's four
//! prompts piped into the REPL. The tools are real: the board on disk is
//! checked after the run, and the demo runs a second time in the same
//! directory, where it sets the first run's board aside and builds the same
//! board again.

use std::path::Path;

use lesson::tasks::{Status, TASKS_DIR, TaskBoard};
use shared::notice::Notices;

use crate::support;

/// The chapter's four prompts.
const PROMPTS: &str = "Create tasks: setup database schema, create API endpoints (depends on schema), write tests (depends on endpoints), write docs (depends on schema)\n\
List all tasks and their statuses\n\
Claim the first unblocked task and complete it\n\
List tasks again\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// The board in `dir` as (id, status, owner, blockedBy) rows.
fn rows(dir: &Path) -> Vec<(String, Status, Option<String>, Vec<String>)> {
    TaskBoard::new(dir, Notices::new())
        .list()
        .into_iter()
        .map(|task| (task.id, task.status, task.owner, task.blocked_by))
        .collect()
}

/// What the demo leaves on the board: the schema done by the agent, the
/// rest pending with their dependencies.
fn expected() -> Vec<(String, Status, Option<String>, Vec<String>)> {
    vec![
        ("1".into(), Status::Completed, Some("agent".into()), vec![]),
        ("2".into(), Status::Pending, None, vec!["1".into()]),
        ("3".into(), Status::Pending, None, vec!["2".into()]),
        ("4".into(), Status::Pending, None, vec!["1".into()]),
    ]
}

#[tokio::test]
async fn the_demo_builds_the_board_claims_and_completes_and_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::run_binary(dir.path(), &[], &[], PROMPTS).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    assert_eq!(rows(&dir.path().join(TASKS_DIR)), expected());
    // What the tools answered, not what the script says: the blocked claim
    // was refused, the completion reported what it unblocked.
    assert!(
        stdout.contains("error: Task 3 cannot start yet; it is blocked by: 2 (pending)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Unblocked: 2 (create API endpoints), 4 (write docs)"),
        "{stdout}"
    );
    for notice in [
        "[tasks] created 1: setup database schema",
        "[tasks] agent claimed 1: setup database schema",
        "[tasks] completed 1: setup database schema",
    ] {
        assert!(stderr.contains(notice), "{notice}\n{stderr}");
    }

    // A second run sets the first board aside and builds the same one.
    let again = support::run_binary(dir.path(), &[], &[], PROMPTS).await;
    let (stdout, stderr) = (text(&again.stdout), text(&again.stderr));
    assert!(again.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(rows(&dir.path().join(TASKS_DIR)), expected());
    let old: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(".tasks.old-"))
        })
        .collect();
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(rows(&old[0]), expected());
}
