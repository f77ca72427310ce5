//! The task board (lesson 12): the five tools through the dispatch map,
//! the files on disk, the refusals the model sees, and claims that stay
//! atomic when many threads and processes race for the same tasks.

use std::collections::BTreeMap;
use std::path::Path;

use lesson::tasks::{Status, TASKS_DIR, Task, TaskBoard};
use serde_json::json;
use shared::history::validate;
use shared::model::scripted::Reply;
use shared::notice::Notices;
use shared::protocol::Message;

use crate::support;

/// The tool results of a history, as (text, is_error), in order.
fn results(history: &[Message]) -> Vec<(String, bool)> {
    history
        .iter()
        .flat_map(Message::tool_results)
        .map(|result| (result.text(), result.is_error))
        .collect()
}

/// The board's files, read back as the tools left them.
fn board(dir: &Path) -> BTreeMap<String, Task> {
    TaskBoard::new(dir.join(TASKS_DIR), Notices::new())
        .list()
        .into_iter()
        .map(|task| (task.id.clone(), task))
        .collect()
}

/// A script that creates the course's four tasks: the schema, then the
/// endpoints and the docs after it, then the tests after the endpoints.
fn create_four() -> Reply {
    Reply::tool("create_task", json!({"subject": "setup database schema"}))
        .and_tool(
            "create_task",
            json!({"subject": "create API endpoints", "blockedBy": ["1"]}),
        )
        .and_tool(
            "create_task",
            json!({"subject": "write tests", "blockedBy": ["2"]}),
        )
        .and_tool(
            "create_task",
            json!({"subject": "write docs", "blockedBy": ["1"]}),
        )
}

#[tokio::test]
async fn tasks_are_created_claimed_and_completed_through_the_map_and_stored_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let (history, model) = support::run(
        dir.path(),
        vec![
            create_four(),
            Reply::tool("claim_task", json!({"task_id": "1", "owner": "alice"})),
            Reply::tool("complete_task", json!({"task_id": "1"})),
            Reply::tool("get_task", json!({"task_id": "2"})),
            Reply::text("done"),
        ],
    )
    .await;
    validate(&history).unwrap();
    let results = results(&history);
    assert_eq!(
        results[..4],
        [
            ("Created task 1: setup database schema".to_string(), false),
            ("Created task 2: create API endpoints".to_string(), false),
            ("Created task 3: write tests".to_string(), false),
            ("Created task 4: write docs".to_string(), false),
        ]
    );
    assert_eq!(
        results[4],
        (
            "Claimed task 1: setup database schema (owner: alice)".to_string(),
            false
        )
    );
    // Completing the schema unblocks exactly the two tasks that waited for
    // it alone; the tests still wait for the endpoints.
    assert_eq!(
        results[5],
        (
            "Completed task 1: setup database schema\nUnblocked: 2 (create API endpoints), 4 (write docs)"
                .to_string(),
            false
        )
    );
    let shown: serde_json::Value = serde_json::from_str(&results[6].0).unwrap();
    assert_eq!(
        shown,
        json!({"id": "2", "subject": "create API endpoints", "description": "",
            "status": "pending", "owner": null, "blockedBy": ["1"]})
    );

    // The files on disk say the same, in the course's format.
    let tasks = board(dir.path());
    assert_eq!(tasks.len(), 4);
    assert_eq!(tasks["1"].status, Status::Completed);
    assert_eq!(tasks["1"].owner.as_deref(), Some("alice"));
    assert_eq!(tasks["3"].blocked_by, ["2"]);
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(".tasks/3.json")).unwrap())
            .unwrap();
    assert_eq!(raw["blockedBy"], json!(["2"]));

    // The five tools were offered to the model, and every request was a
    // valid history.
    for request in model.requests() {
        let names: Vec<&str> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        for tool in [
            "create_task",
            "list_tasks",
            "get_task",
            "claim_task",
            "complete_task",
        ] {
            assert!(names.contains(&tool), "{names:?}");
        }
        let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
        validate(&messages).unwrap();
    }
}

#[tokio::test]
async fn refused_claims_name_the_owner_or_the_blocking_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = support::run(
        dir.path(),
        vec![
            create_four(),
            Reply::tool("claim_task", json!({"task_id": "1", "owner": "alice"}))
                // Someone has it.
                .and_tool("claim_task", json!({"task_id": "1", "owner": "bob"}))
                // Its dependency is only in progress.
                .and_tool("claim_task", json!({"task_id": "2", "owner": "bob"}))
                // Not claimed, so not completable.
                .and_tool("complete_task", json!({"task_id": "4"}))
                // No such task.
                .and_tool("claim_task", json!({"task_id": "9"})),
            Reply::text("done"),
        ],
    )
    .await;
    let results = results(&history);
    assert_eq!(
        results[4..],
        [
            (
                "Claimed task 1: setup database schema (owner: alice)".to_string(),
                false
            ),
            ("Task 1 is in_progress, claimed by alice.".to_string(), true),
            (
                "Task 2 cannot start yet; it is blocked by: 1 (in_progress, alice)".to_string(),
                true
            ),
            (
                "Task 4 is still pending: claim it before completing it.".to_string(),
                true
            ),
            (
                "There is no task 9; list_tasks shows the board.".to_string(),
                true
            ),
        ]
    );
    // Refused claims changed nothing.
    let tasks = board(dir.path());
    assert_eq!(tasks["1"].owner.as_deref(), Some("alice"));
    assert_eq!(tasks["2"].status, Status::Pending);
    assert_eq!(tasks["2"].owner, None);
}

#[tokio::test]
async fn a_missing_dependency_blocks_and_an_unknown_one_is_refused_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = support::run(
        dir.path(),
        vec![
            Reply::tool("create_task", json!({"subject": "base"})).and_tool(
                "create_task",
                json!({"subject": "on top", "blockedBy": ["1"]}),
            ),
            // Someone deletes the dependency's file by hand.
            Reply::tool(
                "bash",
                json!({"command": "rm .tasks/1.json && echo removed"}),
            )
            .and_tool("claim_task", json!({"task_id": "2"}))
            .and_tool(
                "create_task",
                json!({"subject": "typo", "blockedBy": ["7"]}),
            ),
            Reply::text("done"),
        ],
    )
    .await;
    let results = results(&history);
    assert_eq!(
        results[3],
        (
            "Task 2 cannot start yet; it is blocked by: 1 (missing)".to_string(),
            true
        )
    );
    assert_eq!(
        results[4],
        (
            "blockedBy names task 7, which does not exist; the tasks are: 2".to_string(),
            true
        )
    );
    assert_eq!(board(dir.path()).len(), 1);
}

#[tokio::test]
async fn a_dependency_on_a_cycle_is_refused_with_the_cycle_named() {
    let dir = tempfile::tempdir().unwrap();
    // Two tasks edited by hand into waiting for each other.
    let tasks = dir.path().join(TASKS_DIR);
    std::fs::create_dir_all(&tasks).unwrap();
    for (id, dep) in [("10", "11"), ("11", "10")] {
        let task = json!({"id": id, "subject": format!("task {id}"), "status": "pending",
            "owner": null, "blockedBy": [dep]});
        std::fs::write(tasks.join(format!("{id}.json")), task.to_string()).unwrap();
    }
    let (history, _) = support::run(
        dir.path(),
        vec![
            Reply::tool(
                "create_task",
                json!({"subject": "after both", "blockedBy": ["10"]}),
            ),
            Reply::text("done"),
        ],
    )
    .await;
    let results = results(&history);
    assert_eq!(
        results,
        [(
            "These dependencies would form a cycle, so no task in it could ever start: 10 → 11 → 10"
                .to_string(),
            true
        )]
    );
    assert_eq!(board(dir.path()).len(), 2, "nothing was created");
}

#[tokio::test]
async fn a_corrupt_task_file_is_reported_and_skipped_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join(TASKS_DIR);
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(tasks.join("5.json"), "{\"id\": \"5\", \"subj").unwrap();
    // A file whose id does not match its name would shadow another task.
    std::fs::write(
        tasks.join("6.json"),
        json!({"id": "1", "subject": "copied", "status": "pending"}).to_string(),
    )
    .unwrap();
    let (mut agent, _) = support::agent(
        dir.path(),
        vec![
            Reply::tool("create_task", json!({"subject": "still works"}))
                .and_tool("list_tasks", json!({})),
            Reply::text("done"),
        ],
    );
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let results = results(&history);
    // The next id skips nothing it cannot read: 5 and 6 are unreadable, so
    // the first readable-board id is 1.
    assert_eq!(
        results[0],
        ("Created task 1: still works".to_string(), false)
    );
    assert_eq!(results[1], ("[ ] 1: still works".to_string(), false));
    let warnings: Vec<String> = recorder
        .notices_tagged(lesson::tasks::TASKS_TAG)
        .into_iter()
        .filter(|text| text.starts_with("warning:"))
        .collect();
    assert!(
        warnings.iter().any(|text| text.contains("5.json")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|text| text.contains("6.json") && text.contains("its id is `1`")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn ids_cannot_leave_the_board_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.json"), "{}").unwrap();
    let (history, _) = support::run(
        dir.path(),
        vec![
            Reply::tool("get_task", json!({"task_id": "../secret"}))
                .and_tool("claim_task", json!({"task_id": "/etc/passwd"}))
                .and_tool(
                    "create_task",
                    json!({"subject": "x", "blockedBy": ["../../secret"]}),
                ),
            Reply::text("done"),
        ],
    )
    .await;
    for (text, is_error) in results(&history) {
        assert!(is_error, "{text}");
        assert!(text.contains("is not a task id"), "{text}");
    }
    assert!(!dir.path().join(TASKS_DIR).join("1.json").exists());
}

#[tokio::test]
async fn a_list_encoded_as_a_string_and_bad_input_get_clear_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = support::run(
        dir.path(),
        vec![
            Reply::tool("create_task", json!({"subject": "a"}))
                .and_tool(
                    "create_task",
                    json!({"subject": "b", "blockedBy": "[\"1\"]"}),
                )
                .and_tool("create_task", json!({"description": "no subject"}))
                .and_tool(
                    "create_task",
                    json!({"subject": "c", "blockedBy": {"id": 1}}),
                )
                .and_tool("get_task", json!({})),
            Reply::text("done"),
        ],
    )
    .await;
    let results = results(&history);
    assert_eq!(results[1], ("Created task 2: b".to_string(), false));
    assert_eq!(board(dir.path())["2"].blocked_by, ["1"]);
    assert!(
        results[2].1 && results[2].0.contains("subject"),
        "{results:?}"
    );
    assert!(
        results[3].1 && results[3].0.contains("blockedBy"),
        "{results:?}"
    );
    assert!(
        results[4].1 && results[4].0.contains("task_id"),
        "{results:?}"
    );
}

#[tokio::test]
async fn the_board_outlives_the_session() {
    let dir = tempfile::tempdir().unwrap();
    support::run(dir.path(), vec![create_four(), Reply::text("done")]).await;
    // A new agent in the same workspace reads the same board.
    let (history, _) = support::run(
        dir.path(),
        vec![Reply::tool("list_tasks", json!({})), Reply::text("done")],
    )
    .await;
    assert_eq!(
        results(&history)[0].0,
        "[ ] 1: setup database schema\n\
         [ ] 2: create API endpoints (blocked by: 1 (pending))\n\
         [ ] 3: write tests (blocked by: 2 (pending))\n\
         [ ] 4: write docs (blocked by: 1 (pending))"
    );
}

// ANCHOR: race
/// Creates `count` tasks with no dependencies in `dir`.
fn ready_tasks(dir: &Path, count: usize) -> TaskBoard {
    let board = TaskBoard::new(dir.join(TASKS_DIR), Notices::new());
    for n in 0..count {
        board.create(&format!("job {n}"), "", &[]).unwrap();
    }
    board
}

/// Tries to claim every task of the board in `dir` once, as `owner`, and
/// returns the ids it won.
fn claim_everything(dir: &Path, owner: &str, count: usize) -> Vec<String> {
    let board = TaskBoard::new(dir.join(TASKS_DIR), Notices::new());
    (1..=count)
        .map(|id| id.to_string())
        .filter(|id| board.claim(id, owner).is_ok())
        .collect()
}

/// The environment variables that turn [`claimer_process`] on.
const CLAIM_DIR: &str = "TASKS_TEST_CLAIM_DIR";
const CLAIM_OWNER: &str = "TASKS_TEST_CLAIM_OWNER";
const TASK_COUNT: usize = 20;

/// What a claimer process prints before each id it won.
const CLAIMED: &str = "claimed task ";

/// Not a test of its own: the body of each claimer *process* in the race
/// below, which runs this test binary again with only this test selected.
#[test]
#[ignore = "run as a child process by fifty_claimers_in_threads_and_processes_never_share_a_task"]
fn claimer_process() {
    let (Ok(dir), Ok(owner)) = (std::env::var(CLAIM_DIR), std::env::var(CLAIM_OWNER)) else {
        return;
    };
    for id in claim_everything(Path::new(&dir), &owner, TASK_COUNT) {
        println!("{CLAIMED}{id}");
    }
}

#[test]
fn fifty_claimers_in_threads_and_processes_never_share_a_task() {
    let dir = tempfile::tempdir().unwrap();
    ready_tasks(dir.path(), TASK_COUNT);

    // Twenty-five processes start first (they are slower to get going),
    // then twenty-five threads join the same race.
    let processes: Vec<(String, std::process::Child)> = (0..25)
        .map(|n| {
            let owner = format!("process-{n}");
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "tasks::claimer_process",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CLAIM_DIR, dir.path())
                .env(CLAIM_OWNER, &owner)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (owner, child)
        })
        .collect();
    let threads: Vec<_> = (0..25)
        .map(|n| {
            let dir = dir.path().to_path_buf();
            let owner = format!("thread-{n}");
            std::thread::spawn(move || {
                let won = claim_everything(&dir, &owner, TASK_COUNT);
                (owner, won)
            })
        })
        .collect();

    let mut winners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for handle in threads {
        let (owner, won) = handle.join().unwrap();
        for id in won {
            winners.entry(id).or_default().push(owner.clone());
        }
    }
    for (owner, child) in processes {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{owner} failed");
        // The test harness writes its own words on the same lines (`test
        // tasks::claimer_process ... claimed 3`), so the marker is searched
        // for, not expected at the start.
        let stdout = String::from_utf8_lossy(&output.stdout);
        for line in stdout.lines() {
            if let Some((_, id)) = line.split_once(CLAIMED) {
                winners
                    .entry(id.trim().to_string())
                    .or_default()
                    .push(owner.clone());
            }
        }
    }

    // Every task was won exactly once, and its file names the winner.
    let tasks = board(dir.path());
    assert_eq!(winners.len(), TASK_COUNT, "{winners:?}");
    for (id, owners) in &winners {
        assert_eq!(owners.len(), 1, "task {id} was claimed by {owners:?}");
        assert_eq!(tasks[id].status, Status::InProgress);
        assert_eq!(tasks[id].owner.as_ref(), Some(&owners[0]));
    }
}
// ANCHOR_END: race
