//! Acceptance: a 300-turn session whose tools return tens of megabytes in
//! all stays under the threshold, and every request it sends is valid.
//!
//! The model is a small program rather than a fixed script, because where
//! the summaries fall depends on the layers, which is what is under test:
//! it answers each user prompt by reading two 50,000-character files (and
//! now and then by reading five, or by writing a large file), ends the turn
//! once it has the results, answers summary requests with a summary, and
//! answers lesson 9's memory extraction, asked at the end of each turn,
//! with `[]`: nothing new.
//! Every request it receives is checked as it arrives.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use std::sync::{Arc, Mutex};

use s11_error_recovery::compact::{CompactConfig, estimate_tokens, summary};
use s11_error_recovery::permission::ApproveAll;
use serde_json::json;
use shared::CancellationToken;
use shared::agent::Silent;
use shared::cli::Setup;
use shared::error::ApiError;
use shared::history::validate;
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{
    ContentBlock, Message, Request, Response, Role, StopReason, ToolUse, Usage,
};
use shared::tools::Workspace;

const TURNS: usize = 300;
const FILE_CHARS: usize = 50_000;
const WRITE_CHARS: usize = 120_000;

#[derive(Debug, Default)]
struct Stats {
    requests: usize,
    summaries: usize,
    extractions: usize,
    largest_estimate: usize,
    result_chars: usize,
    problems: Vec<String>,
}

struct Session {
    threshold: usize,
    next_id: AtomicUsize,
    stats: Mutex<Stats>,
}

impl Session {
    fn reply(&self, request: &Request<'_>) -> Response {
        let mut stats = self.stats.lock().unwrap();
        stats.requests += 1;
        let n = stats.requests;
        let estimate = estimate_tokens(request.messages);
        stats.largest_estimate = stats.largest_estimate.max(estimate);
        if estimate > self.threshold {
            stats
                .problems
                .push(format!("request {n}: ~{estimate} tokens"));
        }
        if let Err(error) = validate(request.messages) {
            stats.problems.push(format!("request {n}: {error}"));
        }
        let Some(last) = request.messages.last() else {
            stats.problems.push(format!("request {n}: no messages"));
            return text("?");
        };
        if last.role != Role::User {
            stats
                .problems
                .push(format!("request {n}: ends with the assistant"));
        }

        if request.system.first().map(|block| block.text.as_str()) == Some(summary::SYSTEM_PROMPT) {
            stats.summaries += 1;
            return text(&format!(
                "SUMMARY {}: files were read and written.",
                stats.summaries
            ));
        }
        if request.tools.is_empty() {
            // The only other request without tools: memory extraction.
            stats.extractions += 1;
            return text("[]");
        }
        let results: Vec<String> = last
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult(result) => Some(result.text()),
                _ => None,
            })
            .collect();
        if !results.is_empty() || last.text().starts_with("[Compacted]") {
            // The results are in (or were summarised): the turn is done.
            stats.result_chars += results.iter().map(|r| r.chars().count()).sum::<usize>();
            return text("done");
        }
        // A new prompt: "turn N".
        let turn: usize = last.text().trim_start_matches("turn ").parse().unwrap_or(0);
        let mut calls = vec![read("a.txt"), read("b.txt")];
        if turn % 50 == 25 {
            // One large round: 250,000 characters, over the budget.
            calls.extend([read("a.txt"), read("b.txt"), read("a.txt")]);
        }
        if turn % 20 == 19 {
            // A large input the model writes: tool inputs are never
            // cleared, so this pushes the history over the threshold.
            calls.push((
                "write_file",
                json!({"path": format!("out/{turn}.txt"), "content": "w".repeat(WRITE_CHARS)}),
            ));
        }
        Response {
            content: calls
                .into_iter()
                .map(|(name, input)| {
                    ContentBlock::ToolUse(ToolUse {
                        id: format!("toolu_{}", self.next_id.fetch_add(1, Ordering::Relaxed)),
                        name: name.into(),
                        input,
                    })
                })
                .collect(),
            stop_reason: Some(StopReason::ToolUse),
            usage: Usage::default(),
        }
    }
}

fn read(path: &str) -> (&'static str, serde_json::Value) {
    ("read_file", json!({ "path": path }))
}

fn text(text: &str) -> Response {
    Response {
        content: vec![ContentBlock::text(text)],
        stop_reason: Some(StopReason::EndTurn),
        usage: Usage::default(),
    }
}

impl Model for Session {
    fn provider(&self) -> &str {
        "session"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        _on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(async move { Ok(self.reply(request)) })
    }
}

#[tokio::test]
async fn three_hundred_turns_of_large_results_stay_under_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a".repeat(FILE_CHARS)).unwrap();
    std::fs::write(dir.path().join("b.txt"), "b".repeat(FILE_CHARS)).unwrap();
    let config = CompactConfig::default();
    let model = Arc::new(Session {
        threshold: config.threshold_tokens,
        next_id: AtomicUsize::new(0),
        stats: Mutex::default(),
    });
    let mut agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir.path()).unwrap(),
            model: model.clone(),
            model_id: "test".into(),
        },
        Box::new(ApproveAll),
    )
    .unwrap();
    agent.hooks.compactor().config = config.clone();
    // Everything the tools hand back, whether or not the model gets to see
    // it before a summary.
    let output_chars = Arc::new(AtomicUsize::new(0));
    let counted = output_chars.clone();
    agent.hooks.registry().on_post_tool_use(move |_, output| {
        counted.fetch_add(output.text.len(), Ordering::Relaxed);
    });

    let mut history: Vec<Message> = Vec::new();
    for turn in 0..TURNS {
        let outcome = agent
            .run_turn(
                &mut history,
                &format!("turn {turn}"),
                &mut Silent,
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(outcome.final_text, "done", "turn {turn}");
        validate(&history).unwrap();
        assert!(
            history.len() <= config.max_messages + 2,
            "turn {turn}: {}",
            history.len()
        );
    }

    let stats = model.stats.lock().unwrap();
    assert!(stats.problems.is_empty(), "{:#?}", stats.problems);
    // Two calls and one extraction per turn, plus the summaries.
    assert_eq!(stats.extractions, TURNS);
    assert_eq!(stats.requests, 3 * TURNS + stats.summaries);
    // Tens of megabytes went through the tools; no request went over the
    // threshold.
    let output_chars = output_chars.load(Ordering::Relaxed);
    assert!(output_chars >= 30_000_000, "{output_chars}");
    assert!(stats.result_chars >= 25_000_000, "{}", stats.result_chars);
    assert!(stats.largest_estimate <= config.threshold_tokens);
    // Every large write crossed the threshold once; each summary saved its
    // transcript first.
    assert_eq!(stats.summaries, TURNS / 20);
    let transcripts = std::fs::read_dir(dir.path().join(".transcripts"))
        .unwrap()
        .count();
    assert_eq!(transcripts, stats.summaries);
    // The large rounds went over the budget and were saved to disk.
    let saved = std::fs::read_dir(dir.path().join(".task_outputs/tool-results"))
        .unwrap()
        .count();
    assert_eq!(saved, 2 * (TURNS / 50));
    let compactor = agent.hooks.compactor();
    assert_eq!(compactor.summary_failures(), 0);
}
