//! The lesson binary, run as a user runs it: with no key (the demo model)
//! and against a local fake of the Anthropic API.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::json;
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};

const BINARY: &str = env!("CARGO_BIN_EXE_s01_agent_loop");

/// Runs the binary in `dir` with a clean environment plus `vars`.
async fn run(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::new(BINARY);
    command
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::null());
    for (name, value) in vars {
        command.env(name, value);
    }
    command.output().await.expect("the lesson binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn demo_model_runs_a_real_bash_call_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker-file.txt"), "x").unwrap();

    let output = run(dir.path(), &["-p", "list the files here"], &[]).await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // The listing is real: it names a file only this test created.
    assert!(stdout.contains("marker-file.txt"), "{stdout}");
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
