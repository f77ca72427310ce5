//! The REPL in a real terminal: the lesson binary runs in a
//! pseudo-terminal, so its line editor reads the keys, as it does for a
//! user. A line and its Enter written at once (as a paste or a fast typist
//! sends them) run the turn at once; a bracketed paste of several lines is
//! one prompt, one user message.
//!
//! The model is a local fake of the Anthropic API that numbers its replies,
//! so the screen shows which turn ran and the requests show what the model
//! was sent. Every later lesson runs this module unchanged.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rexpect::session::{PtySession, spawn_command};
use serde_json::{Value, json};
use shared::testing::{FakeResponse, FakeServer, ReceivedRequest, anthropic_stream};

/// How long to wait for the expected output before failing (a bound for a
/// broken REPL, not a wait the test relies on).
const EXPECT_TIMEOUT_MS: u64 = 60_000;

/// A fake model: a turn's request (one that offers tools) gets
/// `fake reply N`, N counting those requests; a side query (lesson 9's
/// memory, for one) gets `[]`.
async fn numbered_model() -> FakeServer {
    let turns = Arc::new(AtomicUsize::new(0));
    FakeServer::respond_with(move |request| {
        let text = if offers_tools(request) {
            format!("fake reply {}", turns.fetch_add(1, Ordering::SeqCst) + 1)
        } else {
            "[]".to_string()
        };
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": text})],
            "end_turn",
        ))
    })
    .await
    .unwrap()
}

fn offers_tools(request: &ReceivedRequest) -> bool {
    request.json()["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty())
}

/// The texts of the last message of each turn's request: what the user
/// sent, whatever blocks a lesson adds beside it.
fn user_texts(server: &FakeServer) -> Vec<String> {
    server
        .received()
        .iter()
        .filter(|request| offers_tools(request))
        .map(|request| {
            let body = request.json();
            let last = &body["messages"].as_array().unwrap().last().unwrap()["content"];
            match last {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|block| block["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n---\n"),
                other => panic!("unexpected content: {other}"),
            }
        })
        .collect()
}

/// The lesson binary in a pseudo-terminal, in `dir`, thinking with `server`.
fn start(dir: &std::path::Path, server: &FakeServer) -> PtySession {
    let mut command = std::process::Command::new(crate::BIN);
    command
        .arg("--workdir")
        .arg(dir)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "sk-test-key-0042");
    spawn_command(command, Some(EXPECT_TIMEOUT_MS)).unwrap()
}

/// Writes `bytes` to the terminal in one write, as a paste arrives.
fn write_at_once(session: &PtySession, bytes: &str) {
    let mut terminal = session.process().get_file_handle().unwrap();
    terminal.write_all(bytes.as_bytes()).unwrap();
    terminal.flush().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_written_at_once_runs_and_a_pasted_block_is_one_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let server = numbered_model().await;

    let mut session = start(dir.path(), &server);
    let session = tokio::task::spawn_blocking(move || {
        session.exp_string(">> ").unwrap();
        // A line and its Enter (a terminal sends `\r`) in one write.
        write_at_once(&session, "list the files here\r");
        session.exp_string("fake reply 1").unwrap();
        session.exp_string(">> ").unwrap();
        // Two lines pasted in a terminal that brackets pastes, then Enter.
        write_at_once(&session, "\x1b[200~line one\rline two\x1b[201~\r");
        session.exp_string("fake reply 2").unwrap();
        session
    })
    .await
    .unwrap();

    let sent = user_texts(&server);
    assert!(sent[0].contains("list the files here"), "{sent:?}");
    // The block went to the model as one message, both lines in it.
    assert!(sent[1].contains("line one\nline two"), "{sent:?}");
    drop(session);
}
