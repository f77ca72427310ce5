//! The hook registry, driven through the real loop by a scripted model:
//! each event is triggered at its point of the cycle, and its result does
//! what the chapter says.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use s11_error_recovery::LessonHooks;
use s11_error_recovery::permission::ScriptedApprover;
use serde_json::json;
use shared::CancellationToken;
use shared::agent::{Agent, Silent, TurnError, TurnOutcome};
use shared::cli::Setup;
use shared::history::validate;
use shared::hooks::PromptCheck;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{ContentBlock, Message, Role};
use shared::tools::Workspace;

/// An agent in `dir` whose approver says no to every question.
fn agent(dir: &Path, replies: Vec<Reply>) -> (Agent<LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    let agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model: model.clone(),
            model_id: "test".into(),
        },
        Box::new(ScriptedApprover::new([])),
    )
    .unwrap();
    (agent, model)
}

async fn turn(
    agent: &mut Agent<LessonHooks>,
    history: &mut Vec<Message>,
    prompt: &str,
) -> Result<TurnOutcome, TurnError> {
    agent
        .run_turn(history, prompt, &mut Silent, &CancellationToken::new())
        .await
}

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

/// A shared list hooks can write to and the test can read.
fn log() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

#[tokio::test]
async fn a_pre_tool_use_result_blocks_the_call_and_is_what_the_model_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::tool("bash", json!({"command": "echo ran > ran.txt"}))
                .and_tool("write_file", json!({"path": "kept.txt", "content": "k"})),
            Reply::text("ok"),
        ],
    );
    let seen_after = log();
    let seen = seen_after.clone();
    let registry = agent.hooks.registry();
    registry.on_pre_tool_use(|call| {
        (call.name == "bash").then(|| "Blocked by policy: no shell today.".to_string())
    });
    registry.on_post_tool_use(move |call, _| seen.lock().unwrap().push(call.name.clone()));

    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.unwrap();

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert_eq!(
        results[0],
        ("Blocked by policy: no shell today.".to_string(), true)
    );
    assert!(!dir.path().join("ran.txt").exists(), "the tool never ran");
    // The other call was not blocked; only it reached PostToolUse.
    assert!(!results[1].1);
    assert!(dir.path().join("kept.txt").exists());
    assert_eq!(*seen_after.lock().unwrap(), ["write_file"]);
    // And the block is what the model saw in its next request.
    let sent = &model.requests()[1]["messages"][2]["content"][0];
    assert_eq!(sent["content"], "Blocked by policy: no shell today.");
    assert_eq!(sent["is_error"], true);
}

#[tokio::test]
async fn post_tool_use_sees_every_call_and_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = agent(
        dir.path(),
        vec![
            Reply::tool("write_file", json!({"path": "a.txt", "content": "alpha"}))
                .and_tool("read_file", json!({"path": "a.txt"}))
                .and_tool("read_file", json!({"path": "missing.txt"})),
            Reply::text("ok"),
        ],
    );
    let outputs = Arc::new(Mutex::new(Vec::new()));
    let seen = outputs.clone();
    agent
        .hooks
        .registry()
        .on_post_tool_use(move |call, output| {
            seen.lock()
                .unwrap()
                .push((call.name.clone(), output.text.clone(), output.is_error));
        });

    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.unwrap();

    let outputs = outputs.lock().unwrap();
    assert_eq!(outputs.len(), 3);
    assert_eq!(outputs[0].0, "write_file");
    assert_eq!(
        outputs[1],
        ("read_file".to_string(), "alpha".to_string(), false)
    );
    assert!(outputs[2].2, "errors are outputs too: {:?}", outputs[2]);
}

#[tokio::test]
async fn user_prompt_submit_can_augment_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(dir.path(), vec![Reply::text("ok")]);
    agent.hooks.registry().on_user_prompt_submit(|prompt| {
        Some(PromptCheck::Replace(format!(
            "{prompt}\n\n<context>branch: main</context>"
        )))
    });
    // The first hook with a result wins: this one is never consulted.
    agent
        .hooks
        .registry()
        .on_user_prompt_submit(|_| Some(PromptCheck::Block("too late".into())));

    let mut history = Vec::new();
    turn(&mut agent, &mut history, "fix the bug").await.unwrap();

    let sent = &model.requests()[0]["messages"][0]["content"][0]["text"];
    assert_eq!(sent, "fix the bug\n\n<context>branch: main</context>");
    assert_eq!(
        history[0].text(),
        "fix the bug\n\n<context>branch: main</context>"
    );
}

#[tokio::test]
async fn user_prompt_submit_can_block_the_prompt_before_the_model_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(dir.path(), vec![Reply::text("ok")]);
    agent.hooks.registry().on_user_prompt_submit(|prompt| {
        prompt
            .contains("password")
            .then(|| PromptCheck::Block("prompts must not contain passwords".into()))
    });

    let mut history = Vec::new();
    let blocked = turn(&mut agent, &mut history, "my password is hunter2").await;
    assert_eq!(
        blocked,
        Err(TurnError::PromptBlocked(
            "prompts must not contain passwords".into()
        ))
    );
    assert!(history.is_empty());
    assert!(model.requests().is_empty(), "nothing reached the model");

    // A prompt the hook has no opinion on goes through as typed.
    turn(&mut agent, &mut history, "hello").await.unwrap();
    assert_eq!(history[0].text(), "hello");
}

#[tokio::test]
async fn a_stop_hook_that_always_continues_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::text("done 1"),
            Reply::text("done 2"),
            Reply::text("done 3"),
            Reply::text("done 4"),
            Reply::text("never played"),
        ],
    );
    let stops = log();
    let seen = stops.clone();
    agent.hooks.registry().on_stop(move |history| {
        seen.lock().unwrap().push(history.last().unwrap().text());
        Some("Are you sure? Check again.".into())
    });

    let mut history = Vec::new();
    let outcome = turn(&mut agent, &mut history, "go").await.unwrap();

    let cap = agent.limits.max_stop_continuations;
    assert_eq!(cap, 3);
    assert_eq!(
        model.requests().len(),
        1 + cap,
        "one call plus three continuations"
    );
    assert_eq!(model.remaining(), 1);
    assert_eq!(outcome.final_text, "done 4");
    // The hook saw each final reply; each continuation is a user message.
    assert_eq!(
        *stops.lock().unwrap(),
        ["done 1", "done 2", "done 3", "done 4"]
    );
    validate(&history).unwrap();
    let continuations = history
        .iter()
        .filter(|m| m.role == Role::User && m.text() == "Are you sure? Check again.")
        .count();
    assert_eq!(continuations, cap);
}

#[tokio::test]
async fn a_stop_hook_can_send_the_model_back_to_work_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::text("I think I'm done."),
            Reply::tool("write_file", json!({"path": "tests.txt", "content": "ok"})),
            Reply::text("Now I'm done."),
            // Lesson 9's extraction side query, once the turn really ends.
            Reply::text("[]"),
        ],
    );
    // Continue until the model has written tests.txt.
    let root = dir.path().to_path_buf();
    agent.hooks.registry().on_stop(move |_| {
        (!root.join("tests.txt").exists()).then(|| "You have not written tests.txt yet.".into())
    });

    let mut history = Vec::new();
    let outcome = turn(&mut agent, &mut history, "go").await.unwrap();

    assert_eq!(outcome.final_text, "Now I'm done.");
    // Three calls of the turn, then one extraction: none while the Stop
    // hook was still sending the model back to work.
    assert_eq!(model.requests().len(), 4);
    assert!(dir.path().join("tests.txt").exists());
    validate(&history).unwrap();
}

#[tokio::test]
async fn permission_is_a_pre_tool_use_hook_with_the_same_outcome() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim.txt"), "keep").unwrap();
    let (mut agent, _) = agent(
        dir.path(),
        vec![
            Reply::tool("bash", json!({"command": "echo sudo rm -rf / > ran.txt"}))
                .and_tool("bash", json!({"command": "rm victim.txt"})),
            Reply::text("ok"),
        ],
    );
    // A hook registered after the permission hook sees only calls it allowed.
    let reached = log();
    let seen = reached.clone();
    agent.hooks.registry().on_pre_tool_use(move |call| {
        seen.lock().unwrap().push(call.name.clone());
        None
    });

    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.unwrap();

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert!(results[0].1 && results[0].0.contains("is on the deny list"));
    assert!(results[1].1 && results[1].0.starts_with("Permission denied by the user"));
    assert!(!dir.path().join("ran.txt").exists());
    assert!(dir.path().join("victim.txt").exists());
    assert!(reached.lock().unwrap().is_empty(), "{reached:?}");
}
