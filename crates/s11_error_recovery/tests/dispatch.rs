//! The dispatch map, driven through the real loop by a scripted model.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use s11_error_recovery::permission::ApproveAll;
use serde_json::json;
use shared::CancellationToken;
use shared::agent::Silent;
use shared::cli::Setup;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{ContentBlock, Message};
use shared::tools::Workspace;

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

async fn run(dir: &std::path::Path, replies: Vec<Reply>) -> (Vec<Message>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    // Every question is answered yes: these tests are about dispatch.
    let mut agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model: model.clone(),
            model_id: "test".into(),
        },
        Box::new(ApproveAll),
    )
    .unwrap();
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();
    (history, model)
}

#[tokio::test]
async fn offers_the_base_tools_todo_write_compact_load_skill_and_task() {
    let dir = tempfile::tempdir().unwrap();
    let (_, model) = run(dir.path(), vec![Reply::text("hi")]).await;
    let names: Vec<String> = model.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "todo_write",
            "compact",
            "load_skill",
            "task"
        ]
    );
}

#[tokio::test]
async fn calls_in_one_reply_run_in_order_through_the_map() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = run(
        dir.path(),
        vec![
            Reply::tool(
                "write_file",
                json!({"path": "notes/a.txt", "content": "alpha beta"}),
            )
            .and_tool(
                "edit_file",
                json!({"path": "notes/a.txt", "old_text": "beta", "new_text": "gamma"}),
            )
            .and_tool("read_file", json!({"path": "notes/a.txt"}))
            .and_tool("glob", json!({"pattern": "**/*.txt"})),
            Reply::text("done"),
        ],
    )
    .await;

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert_eq!(results.len(), 4);
    assert!(results.iter().all(|(_, is_error)| !is_error), "{results:?}");
    // The read saw the edit, so the calls ran in the order written.
    assert_eq!(results[2].0, "alpha gamma");
    assert_eq!(results[3].0.trim_end(), "notes/a.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/a.txt")).unwrap(),
        "alpha gamma"
    );
}

#[tokio::test]
async fn unknown_tools_and_escaping_paths_are_errors_the_model_sees() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = run(
        dir.path(),
        vec![
            Reply::tool("delete_everything", json!({}))
                .and_tool("read_file", json!({"path": "../../etc/passwd"}))
                .and_tool("write_file", json!({"path": "x.txt"})),
            Reply::text("ok"),
        ],
    )
    .await;

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert!(results.iter().all(|(_, is_error)| *is_error), "{results:?}");
    assert!(
        results[0].0.contains("Unknown tool: delete_everything")
            && results[0].0.contains("read_file")
    );
    assert!(
        results[1].0.contains("escapes the workspace"),
        "{}",
        results[1].0
    );
    assert!(results[2].0.contains("content"), "{}", results[2].0);
    assert!(!dir.path().join("x.txt").exists());
}
