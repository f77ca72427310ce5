//! The `task` tool, driven through the real loop by a scripted model.
//!
//! The parent and its subagent share one model, and a scripted model plays
//! its replies to whoever asks next. So each script interleaves: the
//! parent's reply with the `task` call, then the subagent's replies, then
//! the parent's next reply, and, when the parent's turn ends, the answer to
//! lesson 9's memory extraction side query (the subagent has no memory).

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use s11_error_recovery::LessonHooks;
use s11_error_recovery::permission::{ApproveAll, Approver, ScriptedApprover};
use s11_error_recovery::subagent::SUBAGENT_MAX_ROUNDS;
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Silent, TurnError, TurnOutcome};
use shared::cli::Setup;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel};
use shared::protocol::{ContentBlock, Message, Role};
use shared::tools::Workspace;

const BASE_TOOLS: [&str; 5] = ["bash", "read_file", "write_file", "edit_file", "glob"];

fn agent(
    dir: &Path,
    approver: impl Approver + 'static,
    replies: Vec<Reply>,
) -> (Agent<LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    let agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model: model.clone(),
            model_id: "test-model".into(),
        },
        Box::new(approver),
    )
    .unwrap();
    (agent, model)
}

async fn turn(
    agent: &mut Agent<LessonHooks>,
    history: &mut Vec<Message>,
) -> Result<TurnOutcome, TurnError> {
    agent
        .run_turn(history, "go", &mut Silent, &CancellationToken::new())
        .await
}

fn task(description: &str) -> Reply {
    Reply::tool("task", json!({ "description": description }))
}

/// The (text, is_error) of each tool result in `message`.
fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some((result.text(), result.is_error)),
            _ => None,
        })
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_parent_keeps_only_the_task_call_and_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let description = "Write notes.txt, read it back, and report.";
    let (mut agent, model) = agent(
        dir.path(),
        ApproveAll,
        vec![
            // Parent: delegate.
            task(description),
            // Subagent: three rounds of its own.
            Reply::tool(
                "write_file",
                json!({"path": "notes.txt", "content": "intermediate-detail-42"}),
            ),
            Reply::tool("read_file", json!({"path": "notes.txt"})),
            Reply::text("Wrote notes.txt and checked it."),
            // Parent: finish.
            Reply::text("done"),
            // Extraction: nothing new.
            Reply::text("[]"),
        ],
    );

    let mut history = Vec::new();
    let outcome = turn(&mut agent, &mut history).await.unwrap();

    assert_eq!(outcome.final_text, "done");
    validate(&history).unwrap();
    // The parent's history: the prompt, the task call, its one result, the end.
    assert_eq!(history.len(), 4, "{history:#?}");
    let calls: Vec<&str> = history[1]
        .tool_uses()
        .map(|call| call.name.as_str())
        .collect();
    assert_eq!(calls, ["task"]);
    assert_eq!(
        results(&history[2]),
        [(
            "[subagent finished in 3 rounds]\nWrote notes.txt and checked it.".to_string(),
            false
        )]
    );
    assert_eq!(history[3].role, Role::Assistant);
    // None of the subagent's steps leaked into it.
    let parent = serde_json::to_string(&history).unwrap();
    assert!(!parent.contains("intermediate-detail-42"), "{parent}");
    assert!(!parent.contains("write_file"), "{parent}");
    // The files it wrote stay.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "intermediate-detail-42"
    );

    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    assert!(
        requests[5].get("tools").is_none(),
        "the extraction side query"
    );
    // The subagent started from one user message, the description, with
    // its own system prompt and the parent's model id.
    let first = &requests[1];
    assert_eq!(first["messages"].as_array().unwrap().len(), 1);
    assert_eq!(first["messages"][0]["role"], "user");
    assert_eq!(first["messages"][0]["content"][0]["text"], description);
    assert_eq!(first["model"], "test-model");
    let system = first["system"][0]["text"].as_str().unwrap();
    assert!(system.contains("You are a subagent"), "{system}");
    assert!(system.contains("do not delegate"), "{system}");
    // Its own history grew round by round: 1, 3, 5 messages.
    let lengths: Vec<usize> = requests[1..4]
        .iter()
        .map(|request| request["messages"].as_array().unwrap().len())
        .collect();
    assert_eq!(lengths, [1, 3, 5]);
    // The parent's next request holds three messages and no trace of them.
    let last = &requests[4];
    assert_eq!(last["messages"].as_array().unwrap().len(), 3);
    assert!(!last.to_string().contains("intermediate-detail-42"));
}

#[tokio::test]
async fn the_subagent_gets_the_base_tools_but_not_task() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        ApproveAll,
        vec![
            task("Try to delegate this."),
            // The subagent calls `task` anyway, as a confused model might.
            Reply::tool("task", json!({"description": "nested"})),
            Reply::text("I could not delegate, so here is my answer."),
            Reply::text("ok"),
            // Extraction: nothing new.
            Reply::text("[]"),
        ],
    );

    let mut history = Vec::new();
    turn(&mut agent, &mut history).await.unwrap();

    let requests = model.requests();
    let mut with_task = BASE_TOOLS.to_vec();
    with_task.extend(["todo_write", "compact", "load_skill", "task"]);
    assert_eq!(tool_names(&requests[0]), with_task);
    assert_eq!(tool_names(&requests[1]), BASE_TOOLS);
    assert_eq!(tool_names(&requests[2]), BASE_TOOLS);
    // The nested call was an unknown tool, not a second subagent: no extra
    // request took a reply, and the last one was the parent's extraction.
    assert_eq!(requests.len(), 5);
    assert_eq!(model.remaining(), 0);
    assert!(requests[4].get("tools").is_none());
    let refused = &requests[2]["messages"][2]["content"][0];
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["content"]
            .as_str()
            .unwrap()
            .starts_with("Unknown tool: task"),
        "{refused}"
    );
    validate(&history).unwrap();
    assert!(!results(&history[2])[0].1);
}

#[tokio::test]
async fn a_subagent_that_hits_the_round_limit_is_an_error_for_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies = vec![task("Count forever.")];
    for round in 1..=SUBAGENT_MAX_ROUNDS {
        replies.push(Reply {
            text: Some(format!("Still counting: {round}.")),
            ..Reply::tool("bash", json!({"command": format!("echo {round}")}))
        });
    }
    replies.push(Reply::text("The subagent gave up; I'll stop here."));
    // Extraction: nothing new.
    replies.push(Reply::text("[]"));
    let (mut agent, model) = agent(dir.path(), ApproveAll, replies);

    let mut history = Vec::new();
    let outcome = turn(&mut agent, &mut history).await.unwrap();

    assert_eq!(SUBAGENT_MAX_ROUNDS, 30);
    assert_eq!(outcome.final_text, "The subagent gave up; I'll stop here.");
    // The parent's call, the subagent's 30, the parent's, then extraction.
    assert_eq!(model.requests().len(), 1 + 30 + 1 + 1);
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    assert_eq!(history.len(), 4);
    let (text, is_error) = &results(&history[2])[0];
    assert!(is_error);
    assert!(
        text.starts_with(
            "subagent stopped after 30 rounds without finishing: \
             its last message was: \"Still counting: 30.\""
        ),
        "{text}"
    );
    assert!(text.contains("stay changed"), "{text}");
}

#[tokio::test]
async fn an_api_error_inside_the_subagent_is_an_error_result_and_the_parent_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        ApproveAll,
        vec![
            task("Write partial.txt, then more."),
            Reply::tool("write_file", json!({"path": "partial.txt", "content": "p"})),
            Reply::error(ScriptedError::Overloaded),
            Reply::tool("read_file", json!({"path": "partial.txt"})),
            Reply::text("I finished it myself."),
            // Extraction: nothing new.
            Reply::text("[]"),
        ],
    );

    let mut history = Vec::new();
    let outcome = turn(&mut agent, &mut history).await.unwrap();

    assert_eq!(outcome.final_text, "I finished it myself.");
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    let (text, is_error) = &results(&history[2])[0];
    assert!(is_error);
    assert!(
        text.starts_with("subagent failed: the model is overloaded"),
        "{text}"
    );
    assert!(text.contains("it wrote no text before stopping"), "{text}");
    // Its write happened before the failure, and stays.
    assert!(dir.path().join("partial.txt").exists());
    assert_eq!(results(&history[4]), [("p".to_string(), false)]);
}

#[tokio::test]
async fn the_permission_hook_applies_inside_the_subagent() {
    let dir = tempfile::tempdir().unwrap();
    // No to every question the gate asks.
    let approver = ScriptedApprover::new([]);
    let (mut agent, model) = agent(
        dir.path(),
        approver.clone(),
        vec![
            task("Clean up."),
            // Harmless if they ran: each only writes a marker file.
            Reply::tool("bash", json!({"command": "echo sudo rm -rf / > ran.txt"}))
                .and_tool("bash", json!({"command": "echo rm x > asked.txt"}))
                .and_tool("bash", json!({"command": "echo fine > allowed.txt"})),
            Reply::text("Two commands were refused."),
            Reply::text("ok"),
            // Extraction: nothing new.
            Reply::text("[]"),
        ],
    );

    let mut history = Vec::new();
    turn(&mut agent, &mut history).await.unwrap();

    assert!(!dir.path().join("ran.txt").exists());
    assert!(!dir.path().join("asked.txt").exists());
    assert!(dir.path().join("allowed.txt").exists());
    // The deny list refused the first without asking; the second asked the
    // parent's approver, which said no.
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].summary(), "bash(echo rm x > asked.txt)");
    let seen_by_subagent = &model.requests()[2]["messages"][2]["content"];
    assert_eq!(seen_by_subagent[0]["is_error"], true);
    assert!(
        seen_by_subagent[0]["content"]
            .as_str()
            .unwrap()
            .contains("is on the deny list")
    );
    assert_eq!(seen_by_subagent[1]["is_error"], true);
    assert!(
        seen_by_subagent[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Permission denied by the user")
    );
    validate(&history).unwrap();
    assert_eq!(
        results(&history[2]),
        [(
            "[subagent finished in 2 rounds]\nTwo commands were refused.".to_string(),
            false
        )]
    );
}

#[tokio::test]
async fn hooks_added_to_the_registry_see_and_can_block_the_subagents_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = agent(
        dir.path(),
        ApproveAll,
        vec![
            task("Write two files."),
            Reply::tool("write_file", json!({"path": "a.txt", "content": "a"}))
                .and_tool("write_file", json!({"path": "secret.txt", "content": "s"})),
            Reply::text("One was blocked."),
            Reply::text("ok"),
            // Extraction: nothing new.
            Reply::text("[]"),
        ],
    );
    let post = Arc::new(Mutex::new(Vec::new()));
    let seen = post.clone();
    let registry = agent.hooks.registry();
    registry.on_pre_tool_use(|call| {
        (call.input["path"] == "secret.txt").then(|| "Blocked by policy.".to_string())
    });
    registry.on_post_tool_use(move |call, _| seen.lock().unwrap().push(call.name.clone()));

    let mut history = Vec::new();
    turn(&mut agent, &mut history).await.unwrap();

    assert!(dir.path().join("a.txt").exists());
    assert!(!dir.path().join("secret.txt").exists());
    // The subagent's allowed call, then the parent's task call.
    assert_eq!(*post.lock().unwrap(), ["write_file", "task"]);
    validate(&history).unwrap();
}

#[tokio::test]
async fn a_task_without_a_description_starts_no_subagent() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        ApproveAll,
        vec![
            Reply::tool("task", json!({}))
                .and_tool("task", json!({"description": 42}))
                .and_tool("task", json!({"description": "  "})),
            Reply::text("ok"),
            // Extraction: nothing new.
            Reply::text("[]"),
        ],
    );

    let mut history = Vec::new();
    turn(&mut agent, &mut history).await.unwrap();

    // The parent's two calls, then its extraction side query.
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "no subagent made a request");
    assert!(requests[2].get("tools").is_none());
    validate(&history).unwrap();
    let results = results(&history[2]);
    assert!(results.iter().all(|(_, is_error)| *is_error));
    assert!(
        results[0]
            .0
            .starts_with("Invalid input for task: missing field `description`"),
        "{results:?}"
    );
    assert!(results[1].0.contains("must be a string"), "{results:?}");
    assert!(results[2].0.contains("is empty"), "{results:?}");
}

#[tokio::test]
async fn cancelling_the_parent_drops_the_subagent_and_keeps_the_history_valid() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        ApproveAll,
        vec![
            task("Wait a long time."),
            Reply::tool("bash", json!({"command": "sleep 30; echo late > late.txt"})),
            Reply::text("never played"),
            Reply::text("never played either"),
        ],
    );
    // Press Ctrl-C, in effect, the moment the subagent's command starts.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    agent.hooks.registry().on_pre_tool_use(move |call| {
        if call.name == "bash" {
            trigger.cancel();
        }
        None
    });

    let mut history = Vec::new();
    let outcome = agent
        .run_turn(&mut history, "go", &mut Silent, &cancel)
        .await;

    assert_eq!(outcome, Err(TurnError::Cancelled));
    assert_eq!(model.remaining(), 2, "the subagent made no further request");
    validate(&history).unwrap();
    let (text, is_error) = &results(&history[2])[0];
    assert!(is_error);
    assert!(text.starts_with("Interrupted"), "{text}");
}
