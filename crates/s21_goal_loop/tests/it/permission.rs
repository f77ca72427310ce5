//! The permission gate (lesson 3): the deny list, the ask rules and the
//! user's answer, driven through the real loop by a scripted model with a
//! scripted approver; then the lesson binary against a local fake of the
//! Anthropic API, where nobody can be asked and `--yes` answers in advance.
//!
//! Every command that should be refused is harmless if it ran anyway: it
//! only writes a marker file, and the test asserts the marker is absent.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use lesson::permission::{
    ApproveAll, Approver, DENY_LIST, ScriptedApprover, check_deny_list, check_rules,
};
use serde_json::{Value, json};
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{ContentBlock, Message, ToolUse};
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};
use shared::tools::Workspace;

use crate::support;

/// The (text, is_error) of each tool result in `message`.
fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .tool_results()
        .map(|result| (result.text(), result.is_error))
        .collect()
}

fn bash(command: &str) -> ToolUse {
    ToolUse {
        id: "toolu_1".into(),
        name: "bash".into(),
        input: json!({ "command": command }),
    }
}

/// Runs one turn of `replies` in `dir` with `approver`; returns the valid
/// history and the model, to read its requests back.
async fn run(
    dir: &Path,
    approver: impl Approver + 'static,
    replies: Vec<Reply>,
) -> (Vec<Message>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    let mut options = support::options();
    options.approver = Box::new(approver);
    let mut agent = support::agent_with(dir, model.clone(), options);
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    validate(&history).unwrap();
    (history, model)
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

    let (history, model) = run(dir.path(), approver.clone(), vec![reply, Reply::text("ok")]).await;

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
    // The refusals are what the model read next, one per call.
    let sent = &model.requests()[1]["messages"][2]["content"];
    assert_eq!(sent.as_array().unwrap().len(), DENY_LIST.len());
    assert!(
        sent.as_array()
            .unwrap()
            .iter()
            .all(|result| result["is_error"] == true),
        "{sent}"
    );
}

#[tokio::test]
async fn the_deny_list_wins_over_pre_approval() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = run(
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

    let (history, _) = run(
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

    let (history, _) = run(
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

    let (history, _) = run(
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
    assert_eq!(results.len(), 3);
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
    let (history, _) = run(
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

// The binary, as a user runs it: no terminal to ask (standard input is a
// pipe), against a fake API whose model makes `calls`.

/// The API key the binary is given.
const KEY: &str = "sk-test-key-0042";

/// A streamed reply that is only `text`.
fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

/// A fake Anthropic API whose model makes `calls` (tool_use blocks) in its
/// first reply and says "finished" in its second. The `[]` replies after
/// those answer the side queries later lessons make after a turn.
async fn fake_model(calls: &[Value]) -> FakeServer {
    let mut responses = vec![
        FakeResponse::sse_body(anthropic_stream(calls, "tool_use")),
        text_reply("finished"),
    ];
    responses.extend((0..4).map(|_| text_reply("[]")));
    FakeServer::start(responses).await.unwrap()
}

fn bash_call(id: &str, command: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": command}})
}

/// Runs one `-p` prompt against `server` with `extra` flags.
async fn run_against(dir: &Path, server: &FakeServer, extra: &[&str]) -> Output {
    let mut args = vec!["-p", "do it"];
    args.extend_from_slice(extra);
    support::run_binary(
        dir,
        &args,
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", KEY),
        ],
        "",
    )
    .await
}

/// The tool results the turn's second request sent back, as (tool_use_id,
/// text, is_error), after checking that the history it sent is valid: each
/// result answers one of the calls, in order.
fn sent_results(server: &FakeServer) -> Vec<(String, String, bool)> {
    let turns: Vec<Value> = server
        .received()
        .iter()
        .map(|request| request.json())
        .filter(|body| body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    assert_eq!(turns.len(), 2);
    let history: Vec<Message> = serde_json::from_value(turns[1]["messages"].clone()).unwrap();
    validate(&history).unwrap();
    history
        .last()
        .unwrap()
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => {
                Some((result.tool_use_id.clone(), result.text(), result.is_error))
            }
            _ => None,
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn a_deny_listed_command_is_refused_and_the_model_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_model(&[bash_call("toolu_1", "echo sudo rm -rf / > ran.txt")]).await;

    let output = run_against(dir.path(), &server, &[]).await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("finished"), "{stdout}");
    let results = sent_results(&server);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "toolu_1");
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0]
            .1
            .starts_with("Permission denied: 'rm -rf /' is on the deny list"),
        "{results:?}"
    );
    assert!(!dir.path().join("ran.txt").exists());
    // Nobody was asked.
    assert!(!stderr.contains("Allow?"), "{stderr}");
}

#[tokio::test]
async fn with_no_terminal_a_question_is_a_no_that_says_how_to_approve() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim.txt"), "keep me").unwrap();
    let server = fake_model(&[bash_call("toolu_1", "rm victim.txt")]).await;

    let output = run_against(dir.path(), &server, &[]).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let results = sent_results(&server);
    assert_eq!(results[0].0, "toolu_1");
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0].1.contains("no terminal to ask") && results[0].1.contains("--yes"),
        "{results:?}"
    );
    assert!(dir.path().join("victim.txt").exists());
    // The question was still shown, with the answer it got.
    assert!(stderr.contains("Tool: bash(rm victim.txt)"), "{stderr}");
    assert!(stderr.contains("no terminal to ask"), "{stderr}");
}

#[tokio::test]
async fn yes_pre_approves_questions_but_not_the_deny_list() {
    for flag in ["--yes", "--approve-all"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("victim.txt"), "delete me").unwrap();
        let server = fake_model(&[
            bash_call("toolu_1", "rm victim.txt"),
            bash_call("toolu_2", "echo sudo rm -rf / > ran.txt"),
        ])
        .await;

        let output = run_against(dir.path(), &server, &[flag]).await;

        let stderr = text(&output.stderr);
        assert!(output.status.success(), "{flag}: {stderr}");
        let results = sent_results(&server);
        assert_eq!(results[0].0, "toolu_1");
        assert!(!results[0].2, "{flag}: {results:?}");
        assert!(!dir.path().join("victim.txt").exists(), "{flag}");
        assert_eq!(results[1].0, "toolu_2");
        assert!(results[1].2, "{flag}: {results:?}");
        assert!(results[1].1.contains("deny list"), "{flag}: {results:?}");
        assert!(!dir.path().join("ran.txt").exists(), "{flag}");
        assert!(stderr.contains("pre-approved"), "{flag}: {stderr}");
    }
}
