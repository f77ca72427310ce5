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
    // Unreadable files still hold their ids: the next one is 7.
    assert_eq!(
        results[0],
        ("Created task 7: still works".to_string(), false)
    );
    assert_eq!(results[1], ("[ ] 7: still works".to_string(), false));
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
async fn a_damaged_task_file_is_kept_byte_for_byte_when_a_task_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join(TASKS_DIR);
    std::fs::create_dir_all(&tasks).unwrap();
    // Two task files cut short (by a crash, or a person's half-done edit):
    // the board cannot read them, and a person can still repair them.
    let damaged: &[u8] = b"{\"id\": \"3\", \"subject\": \"half a ta";
    std::fs::write(tasks.join("1.json"), b"").unwrap();
    std::fs::write(tasks.join("3.json"), damaged).unwrap();
    let (history, _) = support::run(
        dir.path(),
        vec![
            Reply::tool("create_task", json!({"subject": "first"}))
                .and_tool("create_task", json!({"subject": "second"})),
            Reply::text("done"),
        ],
    )
    .await;
    let results = results(&history);
    assert_eq!(
        results,
        [
            ("Created task 4: first".to_string(), false),
            ("Created task 5: second".to_string(), false),
        ]
    );
    assert_eq!(std::fs::read(tasks.join("1.json")).unwrap(), b"");
    assert_eq!(std::fs::read(tasks.join("3.json")).unwrap(), damaged);
    let ids: Vec<String> = board(dir.path()).into_keys().collect();
    assert_eq!(ids, ["4", "5"]);
    // No temporary file is left behind.
    let mut names: Vec<String> = std::fs::read_dir(&tasks)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".lock")
        .collect();
    names.sort();
    assert_eq!(names, ["1.json", "3.json", "4.json", "5.json"]);
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

/// Tries the tasks of the board in `dir` in id order, as `owner`, until it
/// wins one, and returns its id (`None` when every task was taken first).
fn claim_one(dir: &Path, owner: &str, count: usize) -> Option<String> {
    let board = TaskBoard::new(dir.join(TASKS_DIR), Notices::new());
    (1..=count)
        .map(|id| id.to_string())
        .find(|id| board.claim(id, owner).is_ok())
}

/// The environment variables that turn [`claimer_process`] on.
const CLAIM_DIR: &str = "TASKS_TEST_CLAIM_DIR";
const CLAIM_OWNER: &str = "TASKS_TEST_CLAIM_OWNER";

/// Claimers of each kind, and the tasks they race for. Each claimer wins
/// at most one task, and there are more tasks than claimers of one kind,
/// so neither kind can take them all: however the race goes, threads and
/// processes both win, and every task is won (fifty claimers, each of
/// which gives up only when all thirty are taken).
const CLAIMERS_OF_EACH_KIND: usize = 25;
const TASK_COUNT: usize = 30;

/// What a claimer process prints when it is ready to start, and before
/// the id it won.
const READY: &str = "claimer ready";
const CLAIMED: &str = "claimed task ";

/// Not a test of its own: the body of each claimer *process* in the race
/// below, which runs this test binary again with only this test selected.
#[test]
#[ignore = "run as a child process by fifty_claimers_in_threads_and_processes_never_share_a_task"]
fn claimer_process() {
    use std::io::{BufRead, Write};
    let (Ok(dir), Ok(owner)) = (std::env::var(CLAIM_DIR), std::env::var(CLAIM_OWNER)) else {
        return;
    };
    // Started: say so, then wait for the start line on standard input.
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).unwrap();
    if let Some(id) = claim_one(Path::new(&dir), &owner, TASK_COUNT) {
        println!("{CLAIMED}{id}");
    }
}

#[test]
fn fifty_claimers_in_threads_and_processes_never_share_a_task() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    ready_tasks(dir.path(), TASK_COUNT);

    // Twenty-five processes and twenty-five threads, each started and held
    // at a gate, so that all fifty begin the race together: the processes
    // wait for a line on standard input, the threads at a barrier.
    let mut processes: Vec<_> = (0..CLAIMERS_OF_EACH_KIND)
        .map(|n| {
            let owner = format!("process-{n}");
            let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "tasks::claimer_process",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CLAIM_DIR, dir.path())
                .env(CLAIM_OWNER, &owner)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            (owner, child, stdout)
        })
        .collect();
    let gate = std::sync::Arc::new(std::sync::Barrier::new(CLAIMERS_OF_EACH_KIND + 1));
    let threads: Vec<_> = (0..CLAIMERS_OF_EACH_KIND)
        .map(|n| {
            let (dir, gate) = (dir.path().to_path_buf(), gate.clone());
            let owner = format!("thread-{n}");
            std::thread::spawn(move || {
                gate.wait();
                let won = claim_one(&dir, &owner, TASK_COUNT);
                (owner, won)
            })
        })
        .collect();
    // Every process has started (the test harness writes its own words on
    // the same lines, so the marker is searched for, not expected alone).
    for (owner, _, stdout) in &mut processes {
        let mut line = String::new();
        while !line.contains(READY) {
            line.clear();
            let read = stdout.read_line(&mut line).unwrap();
            assert!(read > 0, "{owner} ended before it was ready");
        }
    }
    // Open the gate for both kinds at once.
    for (_, child, _) in &mut processes {
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    gate.wait();

    let mut winners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut wins_by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for handle in threads {
        let (owner, won) = handle.join().unwrap();
        if let Some(id) = won {
            winners.entry(id).or_default().push(owner.clone());
            *wins_by_kind.entry("thread").or_default() += 1;
        }
    }
    for (owner, mut child, mut stdout) in processes {
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        assert!(child.wait().unwrap().success(), "{owner} failed");
        for line in rest.lines() {
            if let Some((_, id)) = line.split_once(CLAIMED) {
                winners
                    .entry(id.trim().to_string())
                    .or_default()
                    .push(owner.clone());
                *wins_by_kind.entry("process").or_default() += 1;
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
    // Both kinds won: the lock held between processes, not only between
    // the threads of one.
    assert!(
        wins_by_kind.get("thread").is_some_and(|wins| *wins > 0)
            && wins_by_kind.get("process").is_some_and(|wins| *wins > 0),
        "{wins_by_kind:?}"
    );
}
// ANCHOR_END: race
