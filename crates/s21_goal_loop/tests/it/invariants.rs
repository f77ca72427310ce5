//! The invariant, checked over thousands of random histories: no layer, and
//! no order of layers, ever separates a `tool_use` from its `tool_result`,
//! breaks the alternation of roles, or loses the first user message.
//!
//! The histories come from a small deterministic generator with a fixed
//! seed, so a failure is reproducible: the message names the case. The
//! full 2,000 cases run where `support::FULL_SIZE` says so (the lesson that
//! introduced compaction and the newest one); the lessons between run a
//! tenth of them, the same first cases.

use std::sync::Arc;

use lesson::compact::reactive::reactive_cut;
use lesson::compact::summary::{self, replace_prefix};
use lesson::compact::{self, CompactConfig, Compactor, SummaryOutcome, budget, micro, snip};
use serde_json::json;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel, SideRule};
use shared::protocol::{ContentBlock, Message, Role, ToolResult, ToolUse};

use crate::support;

/// How many random histories the cheap layers are checked on.
fn cases() -> u64 {
    support::size(2_000) as u64
}

/// xorshift64*: tiny, fast and good enough to shuffle test inputs.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// Text of a random length, mostly short, sometimes large.
    fn text(&mut self) -> String {
        let len = match self.below(10) {
            0..=5 => self.below(200),
            6..=8 => self.below(1_000),
            _ => self.below(6_000),
        };
        let letter = char::from(b'a' + self.below(26) as u8);
        letter.to_string().repeat(len)
    }
}

/// A valid history that ends with a user message, as `before_model_call`
/// sees it: a task, then rounds with zero to four tool calls; rounds
/// without calls are followed by a new prompt. Results sometimes carry
/// text after them (a reminder), messages sometimes hold thinking.
fn random_history(rng: &mut Rng, case: u64) -> Vec<Message> {
    let mut history = vec![Message::user_text(format!("task {case}"))];
    let rounds = rng.below(60);
    for round in 0..rounds {
        let mut assistant = Vec::new();
        if rng.chance(20) {
            assistant.push(ContentBlock::Thinking {
                thinking: "hmm".into(),
                signature: "sig".into(),
            });
        }
        if rng.chance(60) {
            assistant.push(ContentBlock::text(format!("round {round}")));
        }
        let calls = rng.below(5);
        let ids: Vec<String> = (0..calls).map(|n| format!("toolu_{round}_{n}")).collect();
        for id in &ids {
            assistant.push(ContentBlock::ToolUse(ToolUse {
                id: id.clone(),
                name: "bash".into(),
                input: json!({"command": "x"}),
            }));
        }
        if assistant.is_empty() {
            assistant.push(ContentBlock::text("ok"));
        }
        history.push(Message {
            role: Role::Assistant,
            content: assistant,
        });
        let mut user: Vec<ContentBlock> = ids
            .iter()
            .map(|id| {
                let mut result = ToolResult::ok(id, rng.text());
                result.is_error = rng.chance(10);
                ContentBlock::ToolResult(result)
            })
            .collect();
        if user.is_empty() || rng.chance(15) {
            user.push(ContentBlock::text(format!("note {round}")));
        }
        history.push(Message {
            role: Role::User,
            content: user,
        });
    }
    validate(&history).unwrap();
    history
}

fn random_config(rng: &mut Rng) -> CompactConfig {
    // The batch marks come from a generator of their own, seeded from the
    // main one's state without advancing it, so the histories and the other
    // settings are the same cases as before the marks existed.
    let mut marks = Rng::new(rng.0);
    let config = CompactConfig {
        tool_result_budget_chars: 1 + rng.below(8_000),
        preview_chars: rng.below(500),
        max_messages: 1 + rng.below(60),
        keep_head_messages: rng.below(6),
        keep_recent_tool_results: rng.below(6),
        min_clear_chars: rng.below(200),
        threshold_tokens: 1 + rng.below(10_000),
        reactive_keep_messages: rng.below(8),
        ..CompactConfig::default()
    };
    // A low mark from half the high one to above it (which means the high
    // one), and a batch of nothing (the course's behaviour) to 20,000.
    CompactConfig {
        snip_to_messages: (config.max_messages / 2).max(1) + marks.below(config.max_messages),
        micro_batch_chars: marks.below(3) * marks.below(10_000),
        ..config
    }
}

/// The ids of every tool_use, in order.
fn call_ids(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .flat_map(|message| message.tool_uses().map(|call| call.id.clone()))
        .collect()
}

/// Blocks of each message with tool result contents blanked: what layers 1
/// and 3 must leave exactly as it was.
fn shape(history: &[Message]) -> Vec<Message> {
    let mut shape = history.to_vec();
    for message in &mut shape {
        for block in &mut message.content {
            if let ContentBlock::ToolResult(result) = block {
                *result = ToolResult {
                    content: shared::protocol::ToolResultContent::Text(String::new()),
                    ..result.clone()
                };
            }
        }
    }
    shape
}

fn check(history: &[Message], case: u64, step: &str) {
    if let Err(error) = validate(history) {
        panic!("case {case}, after {step}: {error}");
    }
    assert_eq!(
        history.first().map(|m| m.role),
        Some(Role::User),
        "case {case}, after {step}: the history starts with the user"
    );
}

/// The first user message is still first, with all it held.
fn check_first_message(before: &Message, after: &Message, case: u64, step: &str) {
    assert!(
        after.content.starts_with(&before.content),
        "case {case}, after {step}: the first user message was lost"
    );
}

#[test]
fn no_cheap_layer_ever_breaks_a_pair_and_the_task_survives_snipping() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(2024);
    let mut snipped_cases = 0;
    let mut saved_cases = 0;
    let mut cleared_cases = 0;
    let mut batched_cases = 0;
    let cases = cases();
    for case in 0..cases {
        let original = random_history(&mut rng, case);
        let config = random_config(&mut rng);

        // Layer 1 alone: only contents change.
        let mut history = original.clone();
        let report = budget::apply(&mut history, dir.path(), &config);
        check(&history, case, "budget");
        assert_eq!(
            shape(&history),
            shape(&original),
            "case {case}: budget changed the blocks"
        );
        saved_cases += usize::from(!report.saved.is_empty());

        // Layer 2 alone.
        let mut history = original.clone();
        let dropped = snip::snip(&mut history, config.max_messages, config.keep_head_messages);
        check(&history, case, "snip");
        check_first_message(&original[0], &history[0], case, "snip");
        assert_eq!(history.len() + dropped, original.len(), "case {case}");
        if original.len() <= config.max_messages {
            assert_eq!(history, original, "case {case}: snip under the limit");
        } else {
            let head = config.keep_head_messages.max(1) + 1;
            assert!(
                history.len() <= config.max_messages.max(head + 2),
                "case {case}: {} messages left of {}, limit {}",
                history.len(),
                original.len(),
                config.max_messages
            );
        }
        assert_eq!(
            history.last(),
            original.last().filter(|_| dropped == 0).or(history.last())
        );
        assert_eq!(
            history.last().unwrap().content,
            original.last().unwrap().content,
            "case {case}: snip lost the newest message"
        );
        snipped_cases += usize::from(dropped > 0);

        // Layer 3 alone: only contents change, and never the unseen ones.
        let mut history = original.clone();
        let cleared = micro::micro_compact(
            &mut history,
            config.keep_recent_tool_results,
            config.min_clear_chars,
        );
        check(&history, case, "micro");
        assert_eq!(
            shape(&history),
            shape(&original),
            "case {case}: micro changed the blocks"
        );
        assert_eq!(
            history.last(),
            original.last(),
            "case {case}: micro cleared unseen results"
        );
        cleared_cases += usize::from(cleared > 0);

        // Layers 2 and 3 in batches: nothing until one is due, then both
        // all at once.
        let mut history = original.clone();
        let (dropped, _) = compact::batch(&mut history, &config);
        check(&history, case, "batch");
        check_first_message(&original[0], &history[0], case, "batch");
        assert_eq!(history.len() + dropped, original.len(), "case {case}");
        let mut at_once = original.clone();
        snip::snip(
            &mut at_once,
            config.snip_to_messages.min(config.max_messages),
            config.keep_head_messages,
        );
        micro::micro_compact(
            &mut at_once,
            config.keep_recent_tool_results,
            config.min_clear_chars,
        );
        let due = original.len() > config.max_messages
            || micro::pending_chars(
                &original,
                config.keep_recent_tool_results,
                config.min_clear_chars,
            ) > config.micro_batch_chars;
        if due {
            assert_eq!(history, at_once, "case {case}: a batch does all at once");
        } else {
            assert_eq!(history, original, "case {case}: a batch before it is due");
        }
        batched_cases += usize::from(due && history != original);

        // All three, in the pipeline's order.
        let mut history = original.clone();
        budget::apply(&mut history, dir.path(), &config);
        check(&history, case, "pipeline: budget");
        compact::batch(&mut history, &config);
        check(&history, case, "pipeline: snip and micro");
        check_first_message(&original[0], &history[0], case, "pipeline: snip and micro");
        check_first_message(&original[0], &history[0], case, "pipeline: micro");
        // Every call that is kept is still answered (validate), and no call
        // appears that was not there.
        let kept = call_ids(&history);
        let all = call_ids(&original);
        assert!(kept.iter().all(|id| all.contains(id)), "case {case}");

        // The summary's splice, at the points layer 4 and reactive
        // compaction cut.
        for cut in [
            history.len(),
            reactive_cut(&history, config.reactive_keep_messages),
        ] {
            let mut summarised = history.clone();
            replace_prefix(
                &mut summarised,
                cut,
                Message::user_text("[Compacted] summary"),
            );
            check(&summarised, case, &format!("a summary cut at {cut}"));
        }
    }
    // The generator reaches every branch often enough to mean something.
    let enough = cases as usize / 10;
    assert!(snipped_cases > enough, "{snipped_cases}");
    assert!(saved_cases > enough, "{saved_cases}");
    assert!(cleared_cases > enough, "{cleared_cases}");
    assert!(batched_cases > enough, "{batched_cases}");
}

/// The model of the second test: it offers no turn replies (the compactor
/// only ever asks side queries) and answers every summary with "SUMMARY",
/// or, when told to, fails every one with a server error.
fn summariser(fail: bool) -> Arc<ScriptedModel> {
    let reply = if fail {
        Reply::error(ScriptedError::Server)
    } else {
        Reply::text("SUMMARY")
    };
    let rule = SideRule::new(summary::SYSTEM_PROMPT, reply);
    Arc::new(ScriptedModel::new(Vec::new()).with_side_rule(rule))
}

#[tokio::test]
async fn the_whole_pipeline_and_reactive_compaction_keep_every_history_valid() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(7);
    let mut summaries = 0;
    let cases = cases() / 5;
    for case in 0..cases {
        let original = random_history(&mut rng, case);
        let config = random_config(&mut rng);
        let fail = rng.chance(30);
        let model = summariser(fail);
        let mut compactor = Compactor::new(&support::setup(dir.path(), model.clone()), config);

        let mut history = original.clone();
        let report = compactor.before_model_call(&mut history).await;
        check(&history, case, "the pipeline");
        if let Some(SummaryOutcome::Replaced { transcript }) = &report.summary {
            // The summary stands first, and the transcript it names holds
            // the history as it was before the summary.
            summaries += 1;
            assert!(
                history[0].text().starts_with("[Compacted]"),
                "case {case}: {:?}",
                history[0]
            );
            assert!(
                dir.path().join(transcript).is_file(),
                "case {case}: {transcript}"
            );
        } else {
            check_first_message(&original[0], &history[0], case, "the pipeline");
        }

        let mut history = original.clone();
        compactor.reactive_compact(&mut history).await;
        check(&history, case, "reactive compaction");
        // Compaction asks only side queries: no turn was taken.
        assert!(model.requests().is_empty(), "case {case}");
    }
    // About one case in four ends in a summary, so this is reached easily at
    // either size.
    assert!(summaries > cases / 10, "{summaries} of {cases}");
}
