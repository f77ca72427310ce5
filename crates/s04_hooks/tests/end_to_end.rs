//! The lesson binary, run as a user runs it: with no key (the demo model)
//! and against a local fake of the Anthropic API.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::json;
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};
use tokio::io::AsyncWriteExt;

const BINARY: &str = env!("CARGO_BIN_EXE_s04_hooks");

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
async fn demo_model_runs_real_tools_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# readme-text-42\n").unwrap();

    let output = run(dir.path(), &["-p", "read README.md"], &[]).await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    assert!(stdout.contains("readme-text-42"), "{stdout}");
    // All four events fired, in the order of the cycle.
    let workspace = dir.path().canonicalize().unwrap();
    let lines = [
        format!(
            "[HOOK] UserPromptSubmit: working in {}",
            workspace.display()
        ),
        "[HOOK] PreToolUse: read_file(README.md)".to_string(),
        "[HOOK] PostToolUse: read_file returned output (17 chars)".to_string(),
        "[HOOK] Stop: session used 1 tool call".to_string(),
    ];
    let positions: Vec<usize> = lines
        .iter()
        .map(|line| {
            stderr
                .find(line.as_str())
                .unwrap_or_else(|| panic!("{line} in {stderr}"))
        })
        .collect();
    assert!(positions.is_sorted(), "{stderr}");
}

#[tokio::test]
async fn demo_script_walks_through_the_hooks_with_no_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = "read README.md\ncreate test.txt\ndelete the temporary files\n\
                   print 1 to 10000\n";

    let output = run_with_input(dir.path(), &[], &[], prompts).await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches("[HOOK] UserPromptSubmit").count(), 4);
    assert!(dir.path().join("test.txt").exists());
    // The rm asked through the permission hook; with no terminal the answer
    // was no, and the log hook after it never saw the call.
    assert!(stderr.contains("Tool: bash(rm -v draft.tmp)"), "{stderr}");
    assert!(stdout.contains("no terminal to ask"), "{stdout}");
    assert!(dir.path().join("draft.tmp").exists());
    assert!(!stderr.contains("PreToolUse: bash(rm"), "{stderr}");
    // seq's 48,894 characters set off the large-output warning.
    assert!(
        stderr.contains("[HOOK] PostToolUse: ⚠ large output from bash: 48894 chars"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[HOOK] Stop: session used 5 tool calls"),
        "{stderr}"
    );
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
