//! A long, scripted session for measuring what a lesson's requests cost.
//!
//! Each turn the user asks the agent to read one file; the model (a program
//! behind [`FakeServer`], reached by the real [`AnthropicClient`]) answers
//! with one `read_file` call, then, once the result is in, with a short
//! text that ends the turn. Side queries — requests that offer no tools,
//! such as a compaction summary or memory's — get a summary or `[]`.
//!
//! The server bills every request under the caching rules
//! ([`super::cache_sim`]) as it arrives and reports the figures in the
//! reply's `usage`, as the real API would, so the lesson's own usage
//! reporting can be checked against the simulation. The bodies are kept, so
//! the same session can be billed again afterwards under other assumptions
//! (no markers at all, for one).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::cache_sim::{Billing, CacheRules, CacheSim, InvalidRequest};
use super::{FakeResponse, FakeServer, ReceivedRequest, anthropic_stream_with_usage};
use crate::agent::{Agent, Silent};
use crate::cli::Setup;
use crate::hooks::Hooks;
use crate::model::anthropic::{AnthropicClient, AnthropicConfig};
use crate::model::config::Secret;
use crate::protocol::Usage;
use crate::sync::LockExt;
use crate::tools::Workspace;

/// The session's shape.
#[derive(Debug, Clone)]
pub struct ReadingSession {
    /// How many user prompts, each reading one file.
    pub turns: usize,
    /// The size of each file, in bytes.
    pub file_bytes: usize,
    /// The time between two requests, for the cache's lifetime.
    pub spacing: Duration,
    /// The rules the server bills by.
    pub rules: CacheRules,
}

impl Default for ReadingSession {
    /// The session: 100 turns, each reading a 4 KB file, a request
    /// every ten seconds.
    fn default() -> Self {
        Self {
            turns: 100,
            file_bytes: 4_096,
            spacing: Duration::from_secs(10),
            rules: CacheRules::default(),
        }
    }
}

/// The model id the session's agent asks for.
pub const MODEL_ID: &str = "claude-session";

/// The text the model ends every turn with.
pub const DONE: &str = "done";

/// What the session sent and what the agent was told it cost.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Every request body, in the order the server received them.
    pub bodies: Vec<Value>,
    /// The usage the turns' outcomes reported, added up.
    pub usage: Usage,
}

/// The figures of a session, split between the conversation's requests
/// (those that offer tools) and side queries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionBilling {
    /// The figures of the requests that offer tools.
    pub conversation: Billing,
    /// The figures of side queries (summaries, judges, extraction).
    pub side: Billing,
    /// How many conversation requests were sent.
    pub conversation_requests: usize,
    /// How many side queries were sent.
    pub side_requests: usize,
}

/// The prompt of turn `turn`.
pub fn prompt(turn: usize) -> String {
    format!("Read {} and tell me what it says.", file(turn))
}

/// The file turn `turn` reads, relative to the workspace.
pub fn file(turn: usize) -> String {
    format!("files/{turn:03}.txt")
}

/// Writes the files the session reads into `root`.
pub fn write_files(root: &Path, session: &ReadingSession) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("files"))?;
    for turn in 0..session.turns {
        let mut text = String::with_capacity(session.file_bytes);
        let mut line = 0;
        while text.len() < session.file_bytes {
            line += 1;
            text.push_str(&format!(
                "file {turn:03}, line {line:03}: the quick brown fox jumps over the lazy dog.\n"
            ));
        }
        text.truncate(session.file_bytes);
        std::fs::write(root.join(file(turn)), text)?;
    }
    Ok(())
}

/// Runs the session in `root` (which must hold the files, see
/// [`write_files`]) with the agent `build` makes from a setup whose model
/// is the fake server. Fails if a turn fails or ends other than as
/// scripted.
pub async fn run<H: Hooks>(
    session: &ReadingSession,
    root: &Path,
    build: impl FnOnce(Setup) -> anyhow::Result<Agent<H>>,
) -> anyhow::Result<Recorded> {
    let server = start_model(session).await?;
    let client = AnthropicClient::new(AnthropicConfig {
        base_url: server.url().to_string(),
        api_key: Some(Secret::new("session")),
        ..AnthropicConfig::default()
    })?;
    let setup = Setup::new(Workspace::new(root)?, Arc::new(client), MODEL_ID);
    let mut agent = build(setup)?;
    let mut history = Vec::new();
    let mut usage = Usage::default();
    let cancel = CancellationToken::new();
    for turn in 0..session.turns {
        let outcome = agent
            .run_turn(&mut history, &prompt(turn), &mut Silent, &cancel)
            .await?;
        anyhow::ensure!(
            outcome.final_text == DONE,
            "turn {turn} ended with {:?}",
            outcome.final_text
        );
        add(&mut usage, &outcome.usage);
    }
    let bodies = server
        .received()
        .iter()
        .map(ReceivedRequest::json)
        .collect();
    Ok(Recorded { bodies, usage })
}

fn add(total: &mut Usage, turn: &Usage) {
    total.input_tokens += turn.input_tokens;
    total.output_tokens += turn.output_tokens;
    let sum = |a: Option<u64>, b: Option<u64>| a.or(b).map(|_| a.unwrap_or(0) + b.unwrap_or(0));
    total.cache_read_input_tokens =
        sum(total.cache_read_input_tokens, turn.cache_read_input_tokens);
    total.cache_creation_input_tokens = sum(
        total.cache_creation_input_tokens,
        turn.cache_creation_input_tokens,
    );
}

/// Whether a request offers tools: the conversation's, not a side query.
pub fn offers_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty())
}

/// Bills `bodies` in order, one `spacing` apart, each first changed by
/// `adjust` (for instance [`super::cache_sim::strip_markers`]). The error
/// names the first invalid request by its position.
pub fn bill(
    bodies: &[Value],
    session: &ReadingSession,
    adjust: impl Fn(&mut Value),
) -> Result<SessionBilling, (usize, InvalidRequest)> {
    let mut sim = CacheSim::new(session.rules.clone());
    let mut billing = SessionBilling::default();
    for (index, body) in bodies.iter().enumerate() {
        let mut body = body.clone();
        adjust(&mut body);
        let figures = sim
            .request(&body, at(session, index))
            .map_err(|error| (index, error))?;
        if offers_tools(&body) {
            billing.conversation.add(figures);
            billing.conversation_requests += 1;
        } else {
            billing.side.add(figures);
            billing.side_requests += 1;
        }
    }
    Ok(billing)
}

/// When request `index` arrives.
fn at(session: &ReadingSession, index: usize) -> Duration {
    session.spacing * u32::try_from(index).unwrap_or(u32::MAX)
}

/// The model: a fake server that plays the session and bills as it goes.
async fn start_model(session: &ReadingSession) -> std::io::Result<FakeServer> {
    let sim = Mutex::new(CacheSim::new(session.rules.clone()));
    let count = AtomicUsize::new(0);
    let session = session.clone();
    FakeServer::respond_with(move |request| {
        let index = count.fetch_add(1, Ordering::SeqCst);
        let body = request.json();
        let billed = sim
            .locked()
            .request(&body, at(&session, index));
        let figures = match billed {
            Ok(figures) => figures,
            Err(error) => {
                let message = json!({"type": "error", "error": {"type": "invalid_request_error", "message": error.to_string()}});
                return FakeResponse::json(400, message.to_string());
            }
        };
        let usage = json!({
            "input_tokens": figures.uncached,
            "cache_creation_input_tokens": figures.written,
            "cache_read_input_tokens": figures.read,
            "output_tokens": 1,
        });
        let (block, stop) = reply(&body, index);
        FakeResponse::sse_body(anthropic_stream_with_usage(&[block], stop, &usage))
    })
    .await
}

/// The model's move: read the file the prompt names, or end the turn once
/// the result is in; answer a side query with a summary or `[]`.
fn reply(body: &Value, index: usize) -> (Value, &'static str) {
    let text = |text: &str| json!({"type": "text", "text": text});
    if !offers_tools(body) {
        let system = body.get("system").map(Value::to_string).unwrap_or_default();
        return if system.to_lowercase().contains("summar") {
            (text("SUMMARY: files were read, one a turn."), "end_turn")
        } else {
            (text("[]"), "end_turn")
        };
    }
    let last = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|messages| messages.last())
        .cloned()
        .unwrap_or(Value::Null);
    let blocks = last
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has_result = blocks
        .iter()
        .any(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"));
    let path = blocks
        .iter()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .find_map(|text| {
            let start = text.find("files/")?;
            text.get(start..start + "files/000.txt".len())
        });
    match path {
        Some(path) if !has_result => (
            json!({"type": "tool_use", "id": format!("toolu_{index:04}"), "name": "read_file", "input": {"path": path}}),
            "tool_use",
        ),
        _ => (text(DONE), "end_turn"),
    }
}
