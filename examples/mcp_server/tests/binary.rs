//! The server's binary, as a client starts it: over stdio it answers the
//! MCP handshake and lists its tools, and it ends when its client closes
//! standard input; a bad argument is refused with its usage.
//!
//! Lesson 18's tests drive the server's library; this is what proves the
//! `main` they never run. It also makes `cargo test --workspace` build the
//! binary, with the workspace's own dependency features, so CI's
//! conformance run uses that build instead of a `cargo build -p` that would
//! compile the dependencies again with fewer features.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp_example_server");

#[test]
fn over_stdio_it_answers_the_handshake_lists_its_tools_and_ends_with_its_input() {
    let mut server = Command::new(SERVER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = server.stdin.take().unwrap();
    let mut output = BufReader::new(server.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
    };
    // The answer to request `id`, skipping any notification sent before it.
    let mut answer = |id: u64| loop {
        let mut line = String::new();
        assert_ne!(
            output.read_line(&mut line).unwrap(),
            0,
            "the server hung up"
        );
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == json!(id) {
            return message;
        }
    };

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "binary-test", "version": "0"}
        }}),
    );
    let initialized = answer(1);
    assert!(
        initialized["result"]["serverInfo"]["name"].is_string(),
        "{initialized}"
    );
    assert!(
        initialized["result"]["capabilities"]["tools"].is_object(),
        "{initialized}"
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = answer(2);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for expected in ["search_docs", "get_doc", "doc_stats"] {
        assert!(names.contains(&expected), "{names:?}");
    }

    // Closing standard input is how a stdio client hangs up.
    drop(input);
    let status = server.wait().unwrap();
    assert!(
        status.success(),
        "closing stdin should end it cleanly: {status}"
    );
}

#[test]
fn an_unknown_argument_is_refused_with_the_usage() {
    let output = Command::new(SERVER)
        .arg("--stdio")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown argument `--stdio`") && stderr.contains("usage:"),
        "{stderr}"
    );
}
