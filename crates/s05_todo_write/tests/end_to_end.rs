//! The lesson binary, run as a user runs it: with no key (the demo model)
//! and against a local fake of the Anthropic API.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::json;
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};
use tokio::io::AsyncWriteExt;

const BINARY: &str = env!("CARGO_BIN_EXE_s05_todo_write");

/// Runs the binary in `dir` with a clean environment plus `vars`, and no
/// standard input (so no terminal to ask).
async fn run(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    run_with_input(dir, args, vars, "").await
}

/// Like [`run`], with `input` piped to standard input.
async fn run_with_input(dir: &Path, args: &[&str], vars: &[(&str, &str)], input: &str) -> Output {
    let mut command = tokio::process::Command::new(BINARY);
    command
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in vars {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("the lesson binary starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child
        .wait_with_output()
        .await
        .expect("the lesson binary runs")
}

/// A fake Anthropic API whose model calls `calls` (tool_use blocks) in its
/// first reply and says "finished" in its second.
async fn fake_model(calls: &[serde_json::Value]) -> FakeServer {
    FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(calls, "tool_use")),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "finished"})],
            "end_turn",
        )),
    ])
    .await
    .unwrap()
}

fn bash_call(id: &str, command: &str) -> serde_json::Value {
    json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": command}})
}

/// Runs one `-p` prompt against `server` with `extra` flags.
async fn run_against(dir: &Path, server: &FakeServer, extra: &[&str]) -> Output {
    let mut args = vec!["-p", "do it"];
    args.extend_from_slice(extra);
    run(
        dir,
        &args,
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await
}

/// The tool results the second request sent back: (tool_use_id, text, is_error).
fn sent_results(server: &FakeServer) -> Vec<(String, String, bool)> {
    let received = server.received();
    assert_eq!(received.len(), 2);
    let second = received[1].json();
    second["messages"][2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| {
            assert_eq!(block["type"], "tool_result");
            (
                block["tool_use_id"].as_str().unwrap().to_string(),
                block["content"].as_str().unwrap().to_string(),
                block["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn demo_model_plans_then_edits_with_real_tools_without_a_key() {
    let dir = tempfile::tempdir().unwrap();

    let output = run(
        dir.path(),
        &[
            "-p",
            "add type hints, docstrings and a main guard to greet.py",
        ],
        &[],
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // The list is shown as it moves from pending to in progress to completed.
    let planned = stdout.find("[ ] Add type hints").unwrap();
    let started = stdout.find("[▸] Add type hints").unwrap();
    let finished = stdout.find("[✓] Add a main guard").unwrap();
    assert!(planned < started && started < finished, "{stdout}");
    // The edits really happened, on the file the demo created.
    let hello = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
    assert!(hello.contains("def greet(name: str) -> str:"), "{hello}");
    assert!(hello.contains("if __name__ == \"__main__\":"), "{hello}");
}

#[tokio::test]
async fn over_the_wire_a_string_encoded_list_is_accepted_and_the_reminder_follows_results() {
    let dir = tempfile::tempdir().unwrap();
    let bash = |id: &str| {
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": "echo working"}}),
            ],
            "tool_use",
        ))
    };
    let encoded = r#"[{"content": "plan", "status": "completed"}, {"content": "build", "status": "in_progress"}]"#;
    let server = FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "tool_use", "id": "toolu_plan", "name": "todo_write", "input": {"todos": encoded}}),
            ],
            "tool_use",
        )),
        bash("toolu_a"),
        bash("toolu_b"),
        bash("toolu_c"),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "all done"})],
            "end_turn",
        )),
    ])
    .await
    .unwrap();

    let output = run(
        dir.path(),
        &["-p", "build it"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await;

    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("[✓] plan") && stdout.contains("[▸] build"),
        "{stdout}"
    );
    let received = server.received();
    assert_eq!(received.len(), 5);
    let second = received[1].json();
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_plan");
    assert!(result.get("is_error").is_none(), "{result}");
    // Three rounds without todo_write: the fifth request ends with the
    // last bash result, then the reminder, in the same user message.
    let fifth = received[4].json();
    let last = fifth["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_c");
    assert_eq!(
        last["content"][1]["text"],
        "<reminder>Update your todos.</reminder>"
    );
    assert!(!received[3].body.contains("<reminder>"));
}

#[tokio::test]
async fn a_deny_listed_command_is_refused_and_the_model_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_model(&[bash_call("toolu_1", "echo sudo rm -rf / > ran.txt")]).await;

    let output = run_against(dir.path(), &server, &[]).await;

    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("finished"), "{stdout}");
    let results = sent_results(&server);
    assert_eq!(results[0].0, "toolu_1");
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0]
            .1
            .starts_with("Permission denied: 'rm -rf /' is on the deny list"),
        "{results:?}"
    );
    assert!(!dir.path().join("ran.txt").exists());
    // The permission hook blocked it, so the log hook after it never ran,
    // and neither did the tool or its PostToolUse hooks.
    let stderr = text(&output.stderr);
    assert!(stderr.contains("[HOOK] UserPromptSubmit"), "{stderr}");
    assert!(!stderr.contains("[HOOK] PreToolUse"), "{stderr}");
    assert!(!stderr.contains("[HOOK] PostToolUse"), "{stderr}");
    assert!(
        stderr.contains("[HOOK] Stop: session used 1 tool call"),
        "{stderr}"
    );
}

#[tokio::test]
async fn with_no_terminal_a_question_is_a_no_that_says_how_to_approve() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim.txt"), "keep me").unwrap();
    let server = fake_model(&[bash_call("toolu_1", "rm victim.txt")]).await;

    let output = run_against(dir.path(), &server, &[]).await;

    assert!(output.status.success(), "{}", text(&output.stderr));
    let results = sent_results(&server);
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0].1.contains("no terminal to ask") && results[0].1.contains("--yes"),
        "{results:?}"
    );
    assert!(dir.path().join("victim.txt").exists());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("Tool: bash(rm victim.txt)"), "{stderr}");
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

        assert!(output.status.success(), "{}", text(&output.stderr));
        let results = sent_results(&server);
        assert!(!results[0].2, "{flag}: {results:?}");
        assert!(!dir.path().join("victim.txt").exists(), "{flag}");
        assert!(results[1].2, "{flag}: {results:?}");
        assert!(results[1].1.contains("deny list"), "{flag}: {results:?}");
        assert!(!dir.path().join("ran.txt").exists(), "{flag}");
        assert!(text(&output.stderr).contains("pre-approved"), "{flag}");
    }
}

#[tokio::test]
async fn streams_runs_the_tool_and_sends_back_a_paired_result() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "text", "text": "Running it."}),
                json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo tool-output-42"}}),
            ],
            "tool_use",
        )),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "finished"})],
            "end_turn",
        )),
    ])
    .await
    .unwrap();

    let output = run(
        dir.path(),
        &["-p", "echo something"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await;

    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("Running it.") && stdout.contains("finished"),
        "{stdout}"
    );
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].header("x-api-key"), Some("sk-test-key"));
    let second = received[1].json();
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("tool-output-42"),
        "{result}"
    );
}

#[tokio::test]
async fn an_api_error_is_one_clear_line_and_a_failure_status() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![FakeResponse::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )])
    .await
    .unwrap();

    let output = run(
        dir.path(),
        &["-p", "hello"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await;

    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("error: the model is overloaded"),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-test-key"));
}
