//! Acceptance: a 300-turn session whose tools return tens of megabytes in
//! all stays under the threshold, and every request it sends is valid.
//!
//! The model is a small program rather than a fixed script, because where
//! the summaries fall depends on the layers, which is what is under test:
//! it answers each user prompt by reading two 50,000-character files (and
//! now and then by reading five, or by writing a large file), ends the turn
//! once it has the results, and answers summary requests with a summary.
//! Any other side query (later lessons ask their own, such as memory
//! extraction) gets the scripted model's default answer, `[]`: nothing.
//! Every request it receives is checked as it arrives.
//!
//! The full 300 turns run where `support::FULL_SIZE` says so (the lesson
//! that introduced compaction and the newest one); the lessons between run
//! 30, which still cross every threshold: a large write at turn 19 and a
//! round over the budget at turn 25.

use std::sync::atomic::{AtomicUsize, Ordering};

use std::sync::{Arc, Mutex};

use lesson::compact::{CompactConfig, estimate_tokens, summary};
use serde_json::json;
use shared::error::ApiError;
use shared::history::validate;
use shared::model::scripted::DEFAULT_SIDE_REPLY;
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{
    ContentBlock, Message, Request, Response, Role, StopReason, ToolUse, Usage,
};

use crate::support;

/// The session's length: 300 turns at full size, else 30.
fn turns() -> usize {
    support::size(300)
}

const FILE_CHARS: usize = 50_000;
const WRITE_CHARS: usize = 120_000;

#[derive(Debug, Default)]
struct Stats {
    requests: usize,
    /// Requests that offered tools: the turns' own.
    turn_requests: usize,
    summaries: usize,
    /// Side queries other than summaries (none in lesson 8).
    other_side_queries: usize,
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
            stats.other_side_queries += 1;
            return text(DEFAULT_SIDE_REPLY);
        }
        stats.turn_requests += 1;
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
    let turns = turns();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a".repeat(FILE_CHARS)).unwrap();
    std::fs::write(dir.path().join("b.txt"), "b".repeat(FILE_CHARS)).unwrap();
    let config = CompactConfig::default();
    let model = Arc::new(Session {
        threshold: config.threshold_tokens,
        next_id: AtomicUsize::new(0),
        stats: Mutex::default(),
    });
    let options = lesson::Options {
        compact: config.clone(),
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    // Everything the tools hand back, whether or not the model gets to see
    // it before a summary.
    let output_chars = Arc::new(AtomicUsize::new(0));
    let counted = output_chars.clone();
    agent
        .hooks_mut()
        .registry()
        .on_post_tool_use(move |_, output| {
            counted.fetch_add(output.text.len(), Ordering::Relaxed);
        });

    let mut history: Vec<Message> = Vec::new();
    let mut notices = Vec::new();
    for turn in 0..turns {
        let (outcome, recorder) =
            support::turn(&mut agent, &mut history, &format!("turn {turn}")).await;
        assert_eq!(outcome.unwrap().final_text, "done", "turn {turn}");
        validate(&history).unwrap();
        assert!(
            history.len() <= config.max_messages + 2,
            "turn {turn}: {}",
            history.len()
        );
        notices.extend(recorder.notices_tagged("compact"));
    }

    let stats = model.stats.lock().unwrap();
    assert!(stats.problems.is_empty(), "{:#?}", stats.problems);
    // Two calls per turn; the summaries and any other side queries besides.
    assert_eq!(stats.turn_requests, 2 * turns);
    assert_eq!(
        stats.requests,
        stats.turn_requests + stats.summaries + stats.other_side_queries
    );
    // Some 100,000 characters a turn went through the tools, tens of
    // megabytes at full size; at least five sixths of it reached the model,
    // and no request went over the threshold.
    let output_chars = output_chars.load(Ordering::Relaxed);
    assert!(output_chars >= turns * 100_000, "{output_chars}");
    assert!(
        stats.result_chars >= turns * 100_000 * 5 / 6,
        "{}",
        stats.result_chars
    );
    assert!(stats.largest_estimate <= config.threshold_tokens);
    // Every large write (turns 19, 39, …) crossed the threshold once; each
    // summary saved its transcript first and said so.
    let large_writes = (turns + 1) / 20;
    assert!(large_writes >= 1);
    assert_eq!(stats.summaries, large_writes);
    let transcripts = std::fs::read_dir(dir.path().join(".transcripts"))
        .unwrap()
        .count();
    assert_eq!(transcripts, stats.summaries);
    let summaries = notices
        .iter()
        .filter(|notice| notice.starts_with("auto compact (~"))
        .count();
    assert_eq!(summaries, stats.summaries, "{notices:#?}");
    // The large rounds (turns 25, 75, …) went over the budget: two of their
    // five results were saved to disk, and each such round said so.
    let large_rounds = (turns + 24) / 50;
    assert!(large_rounds >= 1);
    let saved = std::fs::read_dir(dir.path().join(".task_outputs/tool-results"))
        .unwrap()
        .count();
    assert_eq!(saved, 2 * large_rounds);
    let budgeted = notices
        .iter()
        .filter(|notice| notice.starts_with("tool-result budget:"))
        .count();
    assert_eq!(budgeted, large_rounds, "{notices:#?}");
    let compactor = agent.hooks_mut().compactor();
    assert_eq!(compactor.summary_failures(), 0);
}
