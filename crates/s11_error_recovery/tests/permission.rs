//! The permission gate, driven through the real loop by a scripted model.
//!
//! Every command that should be refused is harmless if it ran anyway: it
//! only writes a marker file, and the test asserts the marker is absent.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use s11_error_recovery::permission::{
    ApproveAll, Approver, DENY_LIST, ScriptedApprover, check_deny_list, check_rules,
};
use serde_json::json;
use shared::CancellationToken;
use shared::agent::Silent;
use shared::cli::Setup;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{ContentBlock, Message, ToolUse};
use shared::tools::Workspace;

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

fn bash(command: &str) -> ToolUse {
    ToolUse {
        id: "toolu_1".into(),
        name: "bash".into(),
        input: json!({ "command": command }),
    }
}

/// Runs one turn of `replies` in `dir` with `approver`; returns the history.
async fn run(dir: &Path, approver: impl Approver + 'static, replies: Vec<Reply>) -> Vec<Message> {
    let model = Arc::new(ScriptedModel::new(replies));
    let mut agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model,
            model_id: "test".into(),
        },
        Box::new(approver),
    )
    .unwrap();
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();
    validate(&history).unwrap();
    history
}

#[tokio::test]
async fn every_deny_list_entry_blocks_without_asking_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    // One harmless command per entry: each only echoes the entry's text
    // into a marker file, which must not appear.
    let mut reply = Reply::text("");
    for (n, pattern) in DENY_LIST.iter().enumerate() {
        reply = reply.and_tool(
            "bash",
            json!({"command": format!("echo '{pattern}' > ran{n}.txt")}),
        );
    }
    // This approver would say yes to anything it were asked.
    let approver = ScriptedApprover::new([true; 16]);

    let history = run(dir.path(), approver.clone(), vec![reply, Reply::text("ok")]).await;

    let results = results(&history[2]);
    assert_eq!(results.len(), DENY_LIST.len());
    for (pattern, (text, is_error)) in DENY_LIST.iter().zip(&results) {
        assert!(is_error, "{text}");
        assert!(
            text.starts_with(&format!(
                "Permission denied: '{pattern}' is on the deny list"
            )),
            "{text}"
        );
    }
    for n in 0..DENY_LIST.len() {
        assert!(!dir.path().join(format!("ran{n}.txt")).exists());
    }
    assert!(approver.asked().is_empty(), "the deny list never asks");
}

#[tokio::test]
async fn the_deny_list_wins_over_pre_approval() {
    let dir = tempfile::tempdir().unwrap();
    let history = run(
        dir.path(),
        ApproveAll,
        vec![
            Reply::tool("bash", json!({"command": "echo sudo rm -rf / > ran.txt"})),
            Reply::text("ok"),
        ],
    )
    .await;

    let results = results(&history[2]);
    assert!(results[0].1);
    assert!(
        results[0]
            .0
            .starts_with("Permission denied: 'rm -rf /' is on the deny list"),
        "{}",
        results[0].0
    );
    assert!(!dir.path().join("ran.txt").exists());
}

#[tokio::test]
async fn an_ask_rule_runs_the_call_on_yes_and_refuses_it_on_no() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    std::fs::write(dir.path().join("b.txt"), "b").unwrap();
    let approver = ScriptedApprover::new([true, false]);

    let history = run(
        dir.path(),
        approver.clone(),
        vec![
            Reply::tool("bash", json!({"command": "rm a.txt"}))
                .and_tool("bash", json!({"command": "rm b.txt"})),
            Reply::text("ok"),
        ],
    )
    .await;

    let results = results(&history[2]);
    assert!(!results[0].1, "{:?}", results[0]);
    assert!(!dir.path().join("a.txt").exists(), "yes: the rm ran");
    assert!(results[1].1);
    assert!(
        results[1].0.starts_with("Permission denied by the user"),
        "{}",
        results[1].0
    );
    assert!(dir.path().join("b.txt").exists(), "no: the rm did not run");

    let asked = approver.asked();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].reason, "Potentially destructive command");
    assert_eq!(asked[0].summary(), "bash(rm a.txt)");
    assert_eq!(asked[1].summary(), "bash(rm b.txt)");
}

#[tokio::test]
async fn each_ask_pattern_asks_and_ordinary_calls_do_not() {
    let dir = tempfile::tempdir().unwrap();
    // Every answer is no, so nothing that asks can run.
    let approver = ScriptedApprover::new([]);

    let history = run(
        dir.path(),
        approver.clone(),
        vec![
            Reply::tool("bash", json!({"command": "echo 'rm x' > ran1.txt"}))
                .and_tool("bash", json!({"command": "echo '> /etc/x' > ran2.txt"}))
                .and_tool("bash", json!({"command": "echo 'chmod 777' > ran3.txt"}))
                .and_tool(
                    "bash",
                    json!({"command": "ls -la && echo listed > listed.txt"}),
                )
                .and_tool("write_file", json!({"path": "notes.txt", "content": "n"}))
                .and_tool("read_file", json!({"path": "notes.txt"}))
                .and_tool("glob", json!({"pattern": "*"})),
            Reply::text("ok"),
        ],
    )
    .await;

    let results = results(&history[2]);
    assert!(results[..3].iter().all(|(_, is_error)| *is_error));
    assert!(
        results[3..].iter().all(|(_, is_error)| !is_error),
        "{results:?}"
    );
    for n in 1..=3 {
        assert!(!dir.path().join(format!("ran{n}.txt")).exists());
    }
    assert!(dir.path().join("listed.txt").exists());
    assert_eq!(
        approver.asked().len(),
        3,
        "only the three risky calls asked"
    );
}

#[tokio::test]
async fn paths_outside_the_workspace_ask_and_a_yes_cannot_widen_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("x.txt");
    // A symlink inside the workspace that leads out of it: the rule follows
    // it exactly as the tool would.
    std::os::unix::fs::symlink(outside.path(), dir.path().join("door")).unwrap();
    let approver = ScriptedApprover::new([true; 3]);

    let history = run(
        dir.path(),
        approver.clone(),
        vec![
            Reply::tool(
                "write_file",
                json!({"path": target.to_str().unwrap(), "content": "x"}),
            )
            .and_tool("write_file", json!({"path": "door/y.txt", "content": "y"}))
            .and_tool("read_file", json!({"path": "../x.txt"})),
            Reply::text("ok"),
        ],
    )
    .await;

    let asked = approver.asked();
    assert_eq!(asked.len(), 3);
    assert!(asked.iter().all(|r| r.reason == "Access outside workspace"));
    // The user said yes three times, and the file tools still refused.
    let results = results(&history[2]);
    for (text, is_error) in &results {
        assert!(is_error);
        assert!(text.contains("escapes the workspace"), "{text}");
    }
    assert!(!target.exists());
    assert!(!outside.path().join("y.txt").exists());
}

#[tokio::test]
async fn a_substring_deny_list_is_easy_to_get_past() {
    // These spell `sudo` so that the text never contains it, yet bash
    // rebuilds the word before running the command.
    for bypass in [
        r"su''do",
        r"s\udo",
        "$(echo c3Vkbwo= | base64 -d)",
        "\"su\"do",
    ] {
        assert_eq!(check_deny_list(bypass), None, "{bypass}");
    }
    // A full path still contains the word, so that one is caught.
    assert_eq!(check_deny_list("/usr/bin/sudo -n true"), Some("sudo"));
    // And the list cannot read: harmless text is refused.
    assert_eq!(check_deny_list("echo 'never use sudo'"), Some("sudo"));

    // The ask patterns have the same holes: quoting `rm` or using another
    // program gets no question, while an innocent word can trigger one.
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let asks = |command: &str| check_rules(&workspace, &bash(command));
    assert_eq!(asks(r#""rm" -r build"#), None);
    assert_eq!(asks("find build -delete"), None);
    assert_eq!(
        asks("git commit -m 'perform cleanup'"),
        Some("Potentially destructive command")
    );

    // Proof, harmlessly: the gate lets these through without a question,
    // and the shell turns each one into `sudo`.
    let approver = ScriptedApprover::new([]);
    let history = run(
        dir.path(),
        approver.clone(),
        vec![
            Reply::tool(
                "bash",
                json!({"command": r#"echo su''do s\udo $(echo c3Vkbwo= | base64 -d) "su"do"#}),
            ),
            Reply::text("ok"),
        ],
    )
    .await;
    let results = results(&history[2]);
    assert!(!results[0].1);
    assert_eq!(results[0].0.trim_end(), "sudo sudo sudo sudo");
    assert!(approver.asked().is_empty());
}
