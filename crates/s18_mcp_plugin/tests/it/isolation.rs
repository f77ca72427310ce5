//! Worktree isolation in the team (lesson 17): the lead binds worktrees to
//! tasks; the teammates that claim them read, write and run commands inside
//! their task's worktree, so two of them writing the same file name do not
//! collide and the main checkout stays untouched; a worktree with work in
//! it is not removed unless the work is explicitly discarded.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use lesson::tasks::{Status, TASKS_DIR, TaskBoard};
use lesson::team::Autonomy;
use lesson::team::scripts::{AgentScript, AgentScripts};
use lesson::worktrees::{EventKind, WorktreeManager};
use serde_json::json;
use shared::agent::Agent;
use shared::hooks::Hooks;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::notice::Notices;

use crate::support;

const DEADLINE: Duration = Duration::from_secs(60);

/// Runs git in `dir` with a fixed identity, whatever the machine's config.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A repository with one commit.
fn repository(dir: &Path) {
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("README.md"), "# app\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "initial commit"]);
}

fn teammate(name: &str) -> String {
    format!("You are teammate `{name}`")
}

/// A teammate that writes `config.py` where it works, shows where that
/// is, and completes its task.
fn writer(name: &str) -> AgentScript {
    AgentScript::new(
        teammate(name),
        vec![
            Reply::text("Ready."),
            Reply::tool(
                "write_file",
                json!({"path": "config.py", "content": format!("written by {name}\n")}),
            )
            .and_tool(
                "bash",
                json!({"command": "pwd && git branch --show-current"}),
            )
            .and_tool("complete_task", json!({})),
            Reply::text("Done."),
        ],
    )
}

// ANCHOR: acceptance
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_teammates_write_the_same_file_in_two_worktrees_and_the_main_checkout_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    repository(&root);
    let spawn =
        |name: &str| json!({"name": name, "role": "dev", "prompt": "Take a task from the board."});
    let model = Arc::new(AgentScripts::new(
        ScriptedModel::new(vec![
            Reply::tool("create_task", json!({"subject": "refactor auth"}))
                .and_tool("create_task", json!({"subject": "refactor the login page"}))
                .and_tool("create_worktree", json!({"name": "auth", "task_id": "1"}))
                .and_tool("create_worktree", json!({"name": "ui", "task_id": "2"}))
                .and_tool("create_worktree", json!({"name": "../escape"}))
                .and_tool("spawn_teammate", spawn("alice"))
                .and_tool("spawn_teammate", spawn("bob")),
            Reply::text("Two tasks, two worktrees, two teammates."),
            Reply::tool("remove_worktree", json!({"name": "auth"}))
                .and_tool(
                    "remove_worktree",
                    json!({"name": "ui", "discard_changes": true}),
                )
                .and_tool("list_worktrees", json!({})),
            Reply::text("Cleaned up."),
        ]),
        [writer("alice"), writer("bob")],
    ));
    let options = lesson::Options {
        autonomy: Autonomy {
            scan_first: Duration::from_millis(5),
            scan_max: Duration::from_millis(40),
            ..Autonomy::default()
        },
        ..support::options()
    };
    let mut agent = support::agent_with(&root, model.clone(), options);
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let refused = &recorder.results[4];
    assert!(refused.is_error, "{}", refused.text());
    assert!(
        refused.text().contains("invalid worktree name `../escape`"),
        "{}",
        refused.text()
    );
    assert!(!root.join(".worktrees/../escape").exists());

    // Both tasks are done, each in its own worktree. A teammate completes
    // its task in the same round as its shell command, so the model sees
    // that command's output one request later: wait for that request too.
    let board = TaskBoard::new(root.join(TASKS_DIR), Notices::new());
    let shown_to_the_model = |owner: &str, worktree: &str| {
        model
            .agent_requests(&teammate(owner))
            .to_string_lossy()
            .contains(&format!(".worktrees/{worktree}\\nwt/{worktree}"))
    };
    tokio::time::timeout(DEADLINE, async {
        loop {
            let tasks = board.list();
            let done = tasks.len() == 2
                && tasks.iter().all(|task| {
                    task.status == Status::Completed
                        && task.owner.as_deref().is_some_and(|owner| {
                            let worktree = if task.id == "1" { "auth" } else { "ui" };
                            shown_to_the_model(owner, worktree)
                        })
                });
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("both tasks are completed, each teammate's shell ran in its task's worktree");
    for (id, worktree) in [("1", "auth"), ("2", "ui")] {
        let owner = board.get(id).unwrap().owner.unwrap();
        let written =
            std::fs::read_to_string(root.join(".worktrees").join(worktree).join("config.py"))
                .unwrap();
        assert_eq!(
            written,
            format!("written by {owner}\n"),
            "task {id}'s file, in its worktree"
        );
        // Its shell ran there too, on the worktree's branch.
        assert!(
            shown_to_the_model(&owner, worktree),
            "{owner}'s bash ran in {worktree}"
        );
    }
    assert!(
        !root.join("config.py").exists(),
        "the main checkout is untouched"
    );
    let status = git(&root, &["status", "--porcelain"]);
    assert!(!status.contains("config.py"), "{status}");

    // Removing refuses while the work is uncommitted; discarding is explicit.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "clean up").await;
    outcome.unwrap();
    let results = &recorder.results;
    assert!(results[0].is_error, "{}", results[0].text());
    assert!(
        results[0]
            .text()
            .contains("the worktree `auth` was not removed"),
        "{}",
        results[0].text()
    );
    assert!(!results[1].is_error, "{}", results[1].text());
    assert!(root.join(".worktrees/auth/config.py").exists());
    assert!(!root.join(".worktrees/ui").exists());
    assert!(
        results[2].text().starts_with("auth at "),
        "{}",
        results[2].text()
    );
    // The log has what git did, and nothing it refused.
    let kinds: Vec<EventKind> = WorktreeManager::new(&root)
        .events()
        .into_iter()
        .map(|event| event.kind)
        .collect();
    assert_eq!(
        kinds,
        [EventKind::Create, EventKind::Create, EventKind::Remove]
    );
}
// ANCHOR_END: acceptance

#[tokio::test]
async fn a_workspace_that_is_not_a_git_repository_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = support::run(
        dir.path(),
        vec![
            Reply::tool("create_worktree", json!({"name": "auth"})),
            Reply::text("No repository."),
        ],
    )
    .await;
    let result = history
        .iter()
        .flat_map(shared::protocol::Message::tool_results)
        .next()
        .unwrap();
    assert!(result.is_error);
    assert!(
        result.text().contains("is not a git repository"),
        "{}",
        result.text()
    );
    assert!(!dir.path().join(".worktrees/auth").exists());
}

/// Waits until the lead hears a line containing `line` from the team: the
/// lead's own wait for team events, with [`DEADLINE`] only as a safety net
/// (the teammate runs real git and a real shell). An event that arrived
/// while the lead's turn ran went into its `history` instead, so that is
/// read first.
async fn until_heard(
    agent: &mut Agent<lesson::LessonHooks>,
    history: &[shared::protocol::Message],
    line: &str,
) -> Vec<String> {
    let mut seen: Vec<String> = history
        .iter()
        .flat_map(|message| {
            message
                .text()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|text| text.contains(" → "))
        .collect();
    let heard = tokio::time::timeout(DEADLINE, async {
        while !seen.iter().any(|heard| heard.contains(line)) {
            let events = agent.hooks_mut().idle_work().await;
            seen.extend(events.lines().map(str::to_string));
        }
    })
    .await;
    assert!(heard.is_ok(), "the lead heard `{line}`: {seen:#?}");
    seen
}

/// A repository whose own config lets a teammate's shell commit.
fn repository_to_commit_in(root: &Path) {
    repository(root);
    for (key, value) in [
        ("user.name", "Teammate"),
        ("user.email", "teammate@example.com"),
        ("commit.gpgsign", "false"),
    ] {
        git(root, &["config", key, value]);
    }
}

/// The lead's first turn: task 1 with the worktree `auth`, and `alice`.
fn bind_auth_and_spawn_alice() -> Reply {
    Reply::tool("create_task", json!({"subject": "refactor auth"}))
        .and_tool("create_worktree", json!({"name": "auth", "task_id": "1"}))
        .and_tool(
            "spawn_teammate",
            json!({"name": "alice", "role": "dev", "prompt": "Take a task from the board."}),
        )
}

/// Alice's first replies: she completes task 1, then (task done, nothing
/// held) writes one more file and commits, as a model often does.
fn alice_completes_then_commits() -> Vec<Reply> {
    vec![
        Reply::text("Ready."),
        Reply::tool(
            "write_file",
            json!({"path": "auth.py", "content": "def login(): ...\n"}),
        )
        .and_tool("complete_task", json!({})),
        Reply::tool(
            "write_file",
            json!({"path": "NOTES.md", "content": "auth refactored\n"}),
        )
        .and_tool(
            "bash",
            json!({"command": "git add -A && git commit -qm 'refactor auth' && git branch --show-current"}),
        ),
        Reply::text("Done."),
    ]
}

fn fast() -> lesson::Options {
    lesson::Options {
        autonomy: Autonomy {
            scan_first: Duration::from_millis(5),
            scan_max: Duration::from_millis(40),
            ..Autonomy::default()
        },
        ..support::options()
    }
}

/// Checks that alice's work after completing task 1 went to `auth`: the
/// file and the commit are on wt/auth, and the main checkout has neither.
fn assert_the_work_after_completion_is_in_the_worktree(root: &Path) {
    let board = TaskBoard::new(root.join(TASKS_DIR), Notices::new());
    assert_eq!(board.get("1").unwrap().status, Status::Completed);
    assert!(
        !root.join("auth.py").exists(),
        "auth.py in the main checkout"
    );
    assert!(
        !root.join("NOTES.md").exists(),
        "the file written after complete_task is not in the main checkout"
    );
    assert_eq!(
        git(root, &["log", "--format=%s", "main"]),
        "initial commit\n",
        "the commit made after complete_task is not on the user's branch"
    );
    let auth = root.join(".worktrees/auth");
    assert!(auth.join("NOTES.md").exists());
    assert_eq!(
        git(root, &["log", "-1", "--format=%s", "wt/auth"]),
        "refactor auth\n"
    );
    assert_eq!(
        git(root, &["diff", "--name-only", "main", "wt/auth"]),
        "NOTES.md\nauth.py\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_stays_in_its_worktree_after_completing_its_task_until_the_lead_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    repository_to_commit_in(&root);
    let mut alice = alice_completes_then_commits();
    alice.extend([
        // The lead's message, after it kept the worktree.
        Reply::tool(
            "write_file",
            json!({"path": "SUMMARY.md", "content": "auth is on wt/auth\n"}),
        ),
        Reply::text("Written."),
    ]);
    let model = Arc::new(AgentScripts::new(
        ScriptedModel::new(vec![
            bind_auth_and_spawn_alice(),
            Reply::text("One task, in its worktree."),
            Reply::tool("keep_worktree", json!({"name": "auth"})).and_tool(
                "send_message",
                json!({"to": "alice", "content": "Write a summary of your work."}),
            ),
            Reply::text("Kept it; asked for a summary."),
        ]),
        [AgentScript::new(teammate("alice"), alice)],
    ));
    let mut agent = support::agent_with(&root, model.clone(), fast());
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    until_heard(&mut agent, &history, "alice → lead (result): Done.").await;
    assert_the_work_after_completion_is_in_the_worktree(&root);
    let requests = model.agent_requests(&teammate("alice")).to_string_lossy();
    assert!(requests.contains("wt/auth"), "the commit ran on wt/auth");

    // The lead keeps the worktree: the binding ends, and alice is told
    // with the result of her next call, which runs in the main checkout.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "keep it").await;
    outcome.unwrap();
    assert!(
        !recorder.results[0].is_error,
        "{}",
        recorder.results[0].text()
    );
    until_heard(&mut agent, &history, "alice → lead (result): Written.").await;
    assert!(root.join("SUMMARY.md").exists());
    assert!(!root.join(".worktrees/auth/SUMMARY.md").exists());
    let requests = model.agent_requests(&teammate("alice")).to_string_lossy();
    assert!(
        requests.contains("[lead has kept the worktree `auth` for review"),
        "{requests}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_that_vanishes_by_itself_is_not_a_release_but_the_leads_removal_is() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    repository_to_commit_in(&root);
    let mut alice = alice_completes_then_commits();
    alice.extend([
        // Her worktree is gone, but the lead did not remove it.
        Reply::tool(
            "write_file",
            json!({"path": "STRAY.md", "content": "where am I?\n"}),
        ),
        Reply::text("My worktree is gone."),
        // The lead removed it.
        Reply::tool(
            "write_file",
            json!({"path": "SUMMARY.md", "content": "auth was removed\n"}),
        ),
        Reply::text("Written."),
    ]);
    let model = Arc::new(AgentScripts::new(
        ScriptedModel::new(vec![
            bind_auth_and_spawn_alice(),
            Reply::text("One task, in its worktree."),
            Reply::tool(
                "send_message",
                json!({"to": "alice", "content": "Write down where you are."}),
            ),
            Reply::text("Asked."),
            Reply::tool(
                "remove_worktree",
                json!({"name": "auth", "discard_changes": true}),
            )
            .and_tool(
                "send_message",
                json!({"to": "alice", "content": "Write a summary of your work."}),
            ),
            Reply::text("Removed it; asked for a summary."),
        ]),
        [AgentScript::new(teammate("alice"), alice)],
    ));
    let mut agent = support::agent_with(&root, model.clone(), fast());
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    until_heard(&mut agent, &history, "alice → lead (result): Done.").await;
    assert_the_work_after_completion_is_in_the_worktree(&root);

    // Deleted behind everyone's back: alice's calls fail, loudly, and
    // nothing of hers lands in the main checkout.
    std::fs::remove_dir_all(root.join(".worktrees/auth")).unwrap();
    support::turn(&mut agent, &mut history, "ask")
        .await
        .0
        .unwrap();
    until_heard(
        &mut agent,
        &history,
        "alice → lead (result): My worktree is gone.",
    )
    .await;
    assert!(!root.join("STRAY.md").exists());
    let requests = model.agent_requests(&teammate("alice")).to_string_lossy();
    assert!(
        requests.contains("The worktree `auth` you work in cannot be used"),
        "{requests}"
    );

    // The lead removes it: now alice works in the main checkout, told so.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "remove it").await;
    outcome.unwrap();
    assert!(
        !recorder.results[0].is_error,
        "{}",
        recorder.results[0].text()
    );
    until_heard(&mut agent, &history, "alice → lead (result): Written.").await;
    assert!(root.join("SUMMARY.md").exists());
    let requests = model.agent_requests(&teammate("alice")).to_string_lossy();
    assert!(
        requests.contains("[lead has removed the worktree `auth`, so your work there is over"),
        "{requests}"
    );
}

/// `to_string_lossy` for the requests a scripted agent made.
trait Lossy {
    fn to_string_lossy(&self) -> String;
}

impl Lossy for Vec<serde_json::Value> {
    fn to_string_lossy(&self) -> String {
        self.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }
}
