//! The compaction pipeline through the real loop: layer 4 (the summary),
//! its transcript and circuit breaker, the `compact` tool, reactive
//! compaction on a prompt-too-long error, the order of the layers, and the
//! lesson binary's side of it (reactive compaction over the wire, the
//! settings read from the environment).
//!
//! A summary is a side query (a request offered no tools), so the scripted
//! model answers it by a [`SideRule`] on the summariser's system prompt and
//! never from the turn's script; `model.side_requests()` shows what the
//! summariser was sent. Every `[compact]` notice is read from the turn's
//! recorder.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lesson::compact::{CompactConfig, ReactiveOutcome, estimate_tokens, summary};
use lesson::subagent::{SUBAGENT_TAG, TASK_TOOL};
use serde_json::{Value, json};
use shared::agent::{Agent, TurnError};
use shared::error::ApiError;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel, SideRule};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{ContentBlock, Message, Request, Response, Role, ToolResult, ToolUse};
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};

use crate::support;

/// The notices' tag.
const COMPACT: &str = "compact";

/// A scripted model that also lets the test look at the workspace at the
/// moment each summary request arrives.
struct Probed {
    inner: ScriptedModel,
    probe: Box<dyn Fn() + Send + Sync>,
}

impl Model for Probed {
    fn provider(&self) -> &str {
        "probed"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        if request.system.first().map(|block| block.text.as_str()) == Some(summary::SYSTEM_PROMPT) {
            (self.probe)();
        }
        self.inner.send(request, on_delta)
    }
}

/// The lesson's agent in `dir`, thinking with `model`, compacting by
/// `config`.
fn agent(dir: &Path, model: Arc<dyn Model>, config: CompactConfig) -> Agent<lesson::LessonHooks> {
    let options = lesson::Options {
        compact: config,
        ..support::options()
    };
    support::agent_with(dir, model, options)
}

/// A scripted model playing `replies` for the turns and answering summary
/// requests by `summaries`, in order.
fn model(replies: Vec<Reply>, summaries: Vec<Reply>) -> Arc<ScriptedModel> {
    let rules = summaries
        .into_iter()
        .map(|reply| summary_rule(reply).times(1));
    Arc::new(ScriptedModel::new(replies).with_side_rules(rules))
}

/// Answers every summary request with `reply`: matched on the summariser's
/// system prompt, so later lessons' own side queries are not caught by it.
fn summary_rule(reply: Reply) -> SideRule {
    SideRule::new(summary::SYSTEM_PROMPT, reply)
}

/// A reply that runs `echo word`.
fn echo(word: &str) -> Reply {
    Reply::tool("bash", json!({"command": format!("echo {word}")}))
}

/// A command whose output is `chars` characters long.
fn long_output(chars: usize) -> Reply {
    Reply::tool(
        "bash",
        json!({"command": format!("head -c {chars} /dev/zero | tr '\\0' x")}),
    )
}

/// Whether `request` went to the summariser.
fn is_summary_request(request: &Value) -> bool {
    request["system"][0]["text"] == summary::SYSTEM_PROMPT
}

/// The summary requests the model received, in order (later lessons send
/// side queries of their own, which are left out).
fn summary_requests(model: &ScriptedModel) -> Vec<Value> {
    model
        .side_requests()
        .into_iter()
        .filter(is_summary_request)
        .collect()
}

/// The messages of a request, checked to be a valid history.
fn sent_messages(request: &Value) -> Vec<Message> {
    let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
    validate(&messages).unwrap();
    messages
}

/// The conversation the summariser was given: its one user message.
fn summary_input(request: &Value) -> String {
    let input = sent_messages(request);
    assert_eq!(input.len(), 1, "the conversation goes as one message");
    input[0].text()
}

/// The transcripts saved in the workspace `dir`, oldest name first.
fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join(".transcripts")) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    paths
}

/// The tool result `message` starts with.
fn first_result(message: &Message) -> &ToolResult {
    match &message.content[0] {
        ContentBlock::ToolResult(result) => result,
        other => panic!("expected a tool_result, got {other:?}"),
    }
}

/// A small threshold, so a few kilobytes of output cross it.
fn small_threshold(tokens: usize) -> CompactConfig {
    CompactConfig {
        threshold_tokens: tokens,
        ..CompactConfig::default()
    }
}

// ---- layer 4: the summary ---------------------------------------------------

#[tokio::test]
async fn over_the_threshold_the_transcript_is_saved_then_the_history_is_summarised() {
    let dir = tempfile::tempdir().unwrap();
    // When the summary request arrives, the transcript must already be on
    // disk, whole.
    let seen_at_summary: Arc<Mutex<Option<Vec<String>>>> = Arc::default();
    let seen = seen_at_summary.clone();
    let root = dir.path().to_path_buf();
    let model = Arc::new(Probed {
        inner: ScriptedModel::new(vec![long_output(20_000), Reply::text("done")]).with_side_rule(
            summary_rule(Reply::text("SUMMARY: printed 20,000 x characters")),
        ),
        probe: Box::new(move || {
            let files = transcripts(&root)
                .iter()
                .map(|path| std::fs::read_to_string(path).unwrap())
                .collect();
            *seen.lock().unwrap() = Some(files);
        }),
    });
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "print a lot").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.inner.remaining(), 0);
    // The summary was a side call: the summariser's prompt, no tools, its
    // own max_tokens, and one user message holding the conversation.
    let summaries = summary_requests(&model.inner);
    assert_eq!(summaries.len(), 1);
    let side = &summaries[0];
    assert!(side.get("tools").is_none());
    assert_eq!(side["max_tokens"], 2_000);
    let input = summary_input(side);
    assert!(input.contains("print a lot"));
    assert!(input.contains("xxxxxxxxxx"));
    // The transcript was complete before the side call was made.
    let at_summary = seen_at_summary.lock().unwrap().clone().unwrap();
    assert_eq!(at_summary.len(), 1, "one transcript, written first");
    let lines: Vec<Message> = at_summary[0]
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], Message::user_text("print a lot"));
    assert_eq!(lines[2].role, Role::User);
    assert_eq!(first_result(&lines[2]).text().len(), 20_000);
    // The turn's second request carries one user message: the summary, the
    // current request, and where the transcript is.
    let requests = model.inner.requests();
    assert_eq!(requests.len(), 2);
    let next = sent_messages(&requests[1]);
    assert_eq!(next.len(), 1);
    let summary = next[0].text();
    assert!(summary.starts_with("[Compacted]"), "{summary}");
    assert!(summary.contains("SUMMARY: printed 20,000 x characters"));
    assert!(summary.contains("The user's current request:\nprint a lot"));
    let transcript = transcripts(dir.path())[0].clone();
    let name = transcript.file_name().unwrap().to_string_lossy();
    let relative = format!(".transcripts/{name}");
    assert!(summary.contains(&relative), "{summary}");
    validate(&history).unwrap();
    assert_eq!(history.len(), 2);
    // One notice says why, where the transcript went, and what is left.
    let notices = recorder.notices_tagged(COMPACT);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("auto compact (~")
            && notices[0].contains(" tokens > 2000): transcript saved to ")
            && notices[0].contains(&relative)
            && notices[0].contains("history replaced by a summary"),
        "{notices:?}"
    );
}

#[tokio::test]
async fn under_the_threshold_no_summary_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(
        vec![long_output(1_000), echo("two"), Reply::text("done")],
        vec![Reply::text("SUMMARY")],
    );
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    assert!(summary_requests(&model).is_empty());
    assert!(transcripts(dir.path()).is_empty());
    assert_eq!(history.len(), 6);
    assert_eq!(recorder.notices_tagged(COMPACT), Vec::<String>::new());
}

#[tokio::test]
async fn after_three_failed_summaries_the_breaker_stops_asking() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the transcripts' directory should be: the first summary
    // fails before it is asked for, because its transcript cannot be saved.
    std::fs::write(dir.path().join(".transcripts"), "in the way").unwrap();
    // A threshold of one token: every request is over it, so a summary is
    // attempted before each one until the breaker opens.
    let model = model(
        vec![
            // Clears the way, so the next two summaries are really asked for.
            Reply::tool("bash", json!({"command": "rm .transcripts"})),
            echo("two"),
            echo("three"),
            // Breaker open: no more side calls, and `compact` says why.
            Reply::tool("compact", json!({})),
            echo("four"),
            Reply::text("done"),
        ],
        vec![
            // The summary call is refused as too long itself.
            Reply::error(ScriptedError::PromptTooLong),
            // An empty summary is a failure too.
            Reply::text(""),
            // Never reached: the breaker is open by then.
            Reply::text("SUMMARY"),
        ],
    );
    let mut agent = agent(dir.path(), model.clone(), small_threshold(1));
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    // Three attempts, before the first three requests; two got as far as
    // asking the model, after saving their transcripts.
    let summaries = summary_requests(&model);
    assert_eq!(summaries.len(), 2);
    assert_eq!(transcripts(dir.path()).len(), 2);
    // The second attempt was before the second request, the third before
    // the third: each asked about the history as it was then.
    assert!(!summary_input(&summaries[0]).contains("echo two"));
    assert!(summary_input(&summaries[0]).contains("rm .transcripts"));
    assert!(summary_input(&summaries[1]).contains("echo two"));
    let compactor = agent.hooks_mut().compactor();
    assert!(compactor.breaker_open());
    assert_eq!(compactor.summary_failures(), 3);
    // The history was left to the cheaper layers: everything is still there.
    validate(&history).unwrap();
    assert_eq!(history.len(), 12);
    let compact_result = first_result(&history[8]);
    assert!(compact_result.is_error);
    assert!(compact_result.text().contains("unavailable"));
    // Each failure was reported with its reason, then the breaker.
    let notices = recorder.notices_tagged(COMPACT);
    assert_eq!(notices.len(), 4, "{notices:?}");
    assert!(
        notices[0].starts_with("summary failed (1/3): could not save the transcript"),
        "{notices:?}"
    );
    assert!(
        notices[1].starts_with("summary failed (2/3): the summary call failed"),
        "{notices:?}"
    );
    assert_eq!(
        notices[2],
        "summary failed (3/3): the summary came back empty"
    );
    assert!(
        notices[3].starts_with("circuit breaker open: 3 summaries failed in a row"),
        "{notices:?}"
    );
}

/// A scripted model whose summary requests all fail, with whichever error
/// the test sets; every other request goes to the scripted model.
struct FailingSummaries {
    inner: ScriptedModel,
    error: Mutex<ApiError>,
    asked: Mutex<usize>,
}

impl Model for FailingSummaries {
    fn provider(&self) -> &str {
        "failing-summaries"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        if request.system.first().map(|block| block.text.as_str()) == Some(summary::SYSTEM_PROMPT) {
            *self.asked.lock().unwrap() += 1;
            let error = self.error.lock().unwrap().clone();
            return Box::pin(std::future::ready(Err(error)));
        }
        self.inner.send(request, on_delta)
    }
}

// Paused time: a lesson that retries model calls (lesson 11) backs off
// before it gives up on a rate-limited summary.
#[tokio::test(start_paused = true)]
async fn transient_summary_failures_do_not_open_the_breaker_final_ones_do() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(FailingSummaries {
        inner: ScriptedModel::new(vec![
            echo("one"),
            echo("two"),
            Reply::text("first done"),
            echo("three"),
            echo("four"),
            Reply::text("second done"),
        ]),
        error: Mutex::new(ApiError::RateLimited {
            retry_after: None,
            message: "slow down".into(),
        }),
        asked: Mutex::new(0),
    });
    // A threshold of one token: a summary is attempted before every call.
    let mut agent = agent(dir.path(), model.clone(), small_threshold(1));
    let mut history = Vec::new();

    // Three summaries rate limited: a passing outage, not a broken summary.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    assert_eq!(outcome.unwrap().final_text, "first done");
    assert!(*model.asked.lock().unwrap() >= 3);
    let compactor = agent.hooks_mut().compactor();
    assert_eq!(compactor.summary_failures(), 0);
    assert!(!compactor.breaker_open());
    let notices = recorder.notices_tagged(COMPACT);
    assert_eq!(notices.len(), 3, "{notices:?}");
    for notice in &notices {
        assert!(
            notice.starts_with("summary failed: the summary call failed: rate limited")
                && notice.contains("does not count towards the circuit breaker (0/3 so far)"),
            "{notices:?}"
        );
    }

    // Three summaries refused as invalid: the same request would fail
    // again, so these count, and the third opens the breaker.
    *model.error.lock().unwrap() = ApiError::InvalidRequest {
        message: "the summary request is malformed".into(),
    };
    let asked = *model.asked.lock().unwrap();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "again").await;
    assert_eq!(outcome.unwrap().final_text, "second done");
    assert_eq!(model.inner.remaining(), 0);
    // Not retried, and not attempted once the breaker was open.
    assert_eq!(*model.asked.lock().unwrap(), asked + 3);
    let compactor = agent.hooks_mut().compactor();
    assert_eq!(compactor.summary_failures(), 3);
    assert!(compactor.breaker_open());
    let notices = recorder.notices_tagged(COMPACT);
    assert_eq!(notices.len(), 4, "{notices:?}");
    for (index, notice) in notices[..3].iter().enumerate() {
        assert!(
            notice.starts_with(&format!(
                "summary failed ({}/3): the summary call failed: invalid request",
                index + 1
            )),
            "{notices:?}"
        );
    }
    assert!(
        notices[3].starts_with("circuit breaker open"),
        "{notices:?}"
    );
    validate(&history).unwrap();
}

#[tokio::test]
async fn a_successful_summary_resets_the_failure_count() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(
        vec![
            long_output(20_000),
            long_output(20_000),
            long_output(20_000),
            Reply::text("done"),
        ],
        vec![
            Reply::error(ScriptedError::PromptTooLong),
            Reply::text(""),
            Reply::text("SUMMARY"),
        ],
    );
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    assert_eq!(model.remaining(), 0);
    assert_eq!(summary_requests(&model).len(), 3);
    let compactor = agent.hooks_mut().compactor();
    assert_eq!(compactor.summary_failures(), 0);
    assert!(!compactor.breaker_open());
    validate(&history).unwrap();
    let notices = recorder.notices_tagged(COMPACT);
    assert!(
        notices[0].starts_with("summary failed (1/3)"),
        "{notices:?}"
    );
    assert!(
        notices[1].starts_with("summary failed (2/3)"),
        "{notices:?}"
    );
    assert!(notices[2].starts_with("auto compact"), "{notices:?}");
}

#[tokio::test]
async fn a_summary_still_over_the_threshold_counts_as_a_failure() {
    // A summary that does not get under the threshold would be asked for
    // again before every call: it replaces the history, but it counts
    // towards the breaker.
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(
        ScriptedModel::new(vec![long_output(20_000), Reply::text("done")])
            // 12,000 characters: some 3,000 tokens, over the 2,000 allowed.
            .with_side_rule(summary_rule(Reply::text("S".repeat(12_000)))),
    );
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    validate(&history).unwrap();
    assert!(history[0].text().starts_with("[Compacted]"));
    assert_eq!(summary_requests(&model).len(), 1);
    assert_eq!(agent.hooks_mut().compactor().summary_failures(), 1);
    assert!(!agent.hooks_mut().compactor().breaker_open());
    let notices = recorder.notices_tagged(COMPACT);
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].starts_with("auto compact"), "{notices:?}");
    assert_eq!(
        notices[1],
        "summary failed (1/3): the summary is itself over the threshold"
    );
}

// ---- the compact tool -----------------------------------------------------------

#[tokio::test]
async fn compact_is_offered_with_the_course_schema() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(vec![Reply::text("hi")], Vec::new());
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    support::turn(&mut agent, &mut Vec::new(), "hi")
        .await
        .0
        .unwrap();
    let tools = model.requests()[0]["tools"].as_array().unwrap().clone();
    let compact = tools.iter().find(|tool| tool["name"] == "compact").unwrap();
    assert_eq!(
        compact["input_schema"],
        json!({"type": "object", "properties": {}})
    );
}

#[tokio::test]
async fn compact_summarises_before_the_next_call_and_takes_its_round_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(
        vec![
            echo("before"),
            // `compact` is not the last call of its reply: the round's other
            // results must be appended before anything is replaced.
            Reply::tool("compact", json!({})).and_tool("bash", json!({"command": "echo after"})),
            Reply::text("done"),
        ],
        vec![Reply::text("SUMMARY: echoed before and after")],
    );
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "echo twice").await;

    outcome.unwrap();
    assert_eq!(model.remaining(), 0);
    // The tool itself only asked: its result, answering the compact call,
    // says so.
    let compact_call = recorder
        .calls
        .iter()
        .find(|call| call.name == "compact")
        .expect("compact called");
    let compact_result = recorder
        .results
        .iter()
        .find(|result| result.tool_use_id == compact_call.id)
        .expect("compact answered");
    assert!(compact_result.text().starts_with("Compaction requested"));
    assert!(!compact_result.is_error);
    // The summariser saw the whole round: the compact call, its result and
    // the other call's output.
    let summaries = summary_requests(&model);
    assert_eq!(summaries.len(), 1);
    let input = summary_input(&summaries[0]);
    assert!(input.contains("\"name\":\"compact\""), "{input}");
    assert!(input.contains("Compaction requested"), "{input}");
    assert!(input.contains("after\\n"), "{input}");
    // Then the history is the summary alone: the compact tool_use and its
    // tool_result left together.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let next = sent_messages(&requests[2]);
    assert_eq!(next.len(), 1);
    assert!(next[0].text().contains("SUMMARY: echoed before and after"));
    validate(&history).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(transcripts(dir.path()).len(), 1);
    let notices = recorder.notices_tagged(COMPACT);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(
            "auto compact (the model called compact): transcript saved to .transcripts/"
        ),
        "{notices:?}"
    );
}

// Paused time: a server error is transient, so a lesson that retries model
// calls (lesson 11) backs off before giving up on the summary.
#[tokio::test(start_paused = true)]
async fn a_failed_requested_summary_leaves_the_round_intact() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(
        ScriptedModel::new(vec![Reply::tool("compact", json!({})), Reply::text("done")])
            .with_side_rule(summary_rule(Reply::error(ScriptedError::Server))),
    );
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    assert_eq!(model.remaining(), 0);
    // The round is still there, the compact call with its result.
    validate(&history).unwrap();
    assert_eq!(history.len(), 4);
    let call = history[1].tool_uses().next().unwrap();
    assert_eq!(call.name, "compact");
    assert_eq!(first_result(&history[2]).tool_use_id, call.id);
    assert!(
        first_result(&history[2])
            .text()
            .starts_with("Compaction requested")
    );
    // A server error is transient: reported, but not counted.
    assert_eq!(agent.hooks_mut().compactor().summary_failures(), 0);
    // The request was used up: one summary was attempted, not one before
    // each later call. (A lesson that retries sends the same request again;
    // that is still one summary.)
    let notices = recorder.notices_tagged(COMPACT);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("summary failed: the summary call failed: server error")
            && notices[0].ends_with(
                "a transient failure, so it does not count towards the circuit breaker \
                 (0/3 so far)"
            ),
        "{notices:?}"
    );
    let summaries = summary_requests(&model);
    assert!(!summaries.is_empty());
    assert!(summaries.iter().all(|request| *request == summaries[0]));
}

// ---- reactive compaction ----------------------------------------------------------

#[tokio::test]
async fn prompt_too_long_is_compacted_and_retried_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(
        vec![
            echo("one"),
            echo("two"),
            echo("three"),
            Reply::error(ScriptedError::PromptTooLong),
            Reply::text("done"),
        ],
        vec![Reply::text("SUMMARY: echoed one")],
    );
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "echo three words").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let refused = sent_messages(&requests[3]);
    assert_eq!(refused.len(), 7);
    // Only the part before the kept messages was summarised.
    let summaries = summary_requests(&model);
    assert_eq!(summaries.len(), 1);
    let input = summary_input(&summaries[0]);
    assert!(
        input.contains("echo one") && !input.contains("echo two"),
        "{input}"
    );
    // The retry: the summary, then the last two rounds verbatim.
    let retried = sent_messages(&requests[4]);
    assert_eq!(retried.len(), 5);
    assert!(retried[0].text().starts_with("[Reactive compact]"));
    assert!(retried[0].text().contains("SUMMARY: echoed one"));
    assert_eq!(retried[1..], refused[3..]);
    assert_eq!(transcripts(dir.path()).len(), 1);
    validate(&history).unwrap();
    let notices = recorder.notices_tagged(COMPACT);
    assert!(
        notices.iter().any(|notice| notice
            .starts_with("reactive compact: transcript saved to .transcripts/")),
        "{notices:?}"
    );
}

#[tokio::test]
async fn a_second_prompt_too_long_in_a_row_is_returned_as_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(
        vec![
            Reply::error(ScriptedError::PromptTooLong),
            Reply::error(ScriptedError::PromptTooLong),
            Reply::text("the next turn works"),
        ],
        vec![Reply::text("SUMMARY")],
    );
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;

    let error = outcome.unwrap_err();
    assert!(
        matches!(error, TurnError::Api(ApiError::PromptTooLong { .. })),
        "{error:?}"
    );
    // One compaction, one retry, no third attempt.
    assert_eq!(model.requests().len(), 2);
    assert_eq!(summary_requests(&model).len(), 1);
    validate(&history).unwrap();
    // The session goes on.
    let (outcome, _) = support::turn(&mut agent, &mut history, "again").await;
    assert_eq!(outcome.unwrap().final_text, "the next turn works");
    validate(&history).unwrap();
}

#[tokio::test]
async fn when_the_summary_fails_reactive_compaction_snips_hard_instead() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies: Vec<Reply> = (0..6).map(|_| long_output(500)).collect();
    replies.push(Reply::error(ScriptedError::PromptTooLong));
    replies.push(Reply::text("done"));
    // The summary request is refused as too long as well.
    let model = model(replies, vec![Reply::error(ScriptedError::PromptTooLong)]);
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "the task").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    assert_eq!(agent.hooks_mut().compactor().summary_failures(), 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 8);
    let retried = sent_messages(&requests[7]);
    // The task, then the last rounds; every result the model has seen is
    // cleared, and only the newest round's, which it has not, is whole.
    assert!(retried.len() <= 6, "{}", retried.len());
    assert!(retried[0].text().starts_with("the task"));
    assert!(retried[0].text().contains("snipped"));
    let (newest, older) = retried.split_last().unwrap();
    for message in older {
        for block in &message.content {
            if let ContentBlock::ToolResult(result) = block {
                assert!(result.text().starts_with("[Earlier tool result compacted"));
            }
        }
    }
    assert_eq!(first_result(newest).text().len(), 500);
    validate(&history).unwrap();
    let notices = recorder.notices_tagged(COMPACT);
    assert!(
        notices
            .iter()
            .any(|notice| notice.starts_with("reactive compact: aggressive snip dropped")),
        "{notices:?}"
    );
}

#[tokio::test]
async fn with_nothing_left_to_remove_the_error_is_returned_without_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    // The summary comes back empty; with one message there is nothing to
    // snip or clear either.
    let model = model(
        vec![Reply::error(ScriptedError::PromptTooLong)],
        vec![Reply::text("")],
    );
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    let error = outcome.unwrap_err();
    assert!(matches!(
        error,
        TurnError::Api(ApiError::PromptTooLong { .. })
    ));
    assert_eq!(model.remaining(), 0);
    assert_eq!(model.requests().len(), 1, "no retry");
    assert_eq!(summary_requests(&model).len(), 1);
    assert_eq!(history, [Message::user_text("go")]);
    let notices = recorder.notices_tagged(COMPACT);
    assert!(
        notices.contains(&"reactive compact: nothing left to remove".into()),
        "{notices:?}"
    );
}

#[tokio::test]
async fn reactive_compaction_is_usable_on_its_own() {
    // Lesson 11 calls it directly, outside `call_model`.
    let dir = tempfile::tempdir().unwrap();
    let model = model(Vec::new(), vec![Reply::text("SUMMARY")]);
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = vec![
        Message::user_text("task"),
        Message::assistant_text("a"),
        Message::user_text("b"),
        Message::assistant_text("c"),
        Message::user_text("d"),
        Message::assistant_text("e"),
        Message::user_text("f"),
    ];
    let outcome = agent
        .hooks_mut()
        .compactor()
        .reactive_compact(&mut history)
        .await;
    let ReactiveOutcome::Summarised { transcript } = outcome else {
        panic!("summarised: {outcome:?}");
    };
    assert!(dir.path().join(&transcript).is_file());
    validate(&history).unwrap();
    assert_eq!(history.len(), 5);
    assert!(history[0].text().starts_with("[Reactive compact]"));
    assert_eq!(history[1], Message::assistant_text("c"));
    // What was summarised is what was cut: the first two messages.
    let summaries = summary_requests(&model);
    assert_eq!(summaries.len(), 1);
    let input = summary_input(&summaries[0]);
    assert!(
        input.contains("\"task\"") && input.contains("\"a\""),
        "{input}"
    );
    assert!(!input.contains("\"c\""), "{input}");
    assert!(model.requests().is_empty());
}

// ---- the pipeline -------------------------------------------------------------------

#[tokio::test]
async fn the_pipeline_runs_budget_then_snip_then_micro() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(Vec::new(), vec![Reply::text("SUMMARY")]);
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    // 30 rounds of 1,000-character results, then one of 250,000.
    let mut history = vec![Message::user_text("the task")];
    for round in 0..31 {
        let id = format!("toolu_{round:02}");
        let size = if round == 30 { 250_000 } else { 1_000 };
        history.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                id: id.clone(),
                name: "bash".into(),
                input: json!({}),
            })],
        });
        history.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok(
                &id,
                "r".repeat(size),
            ))],
        });
    }

    let report = agent
        .hooks_mut()
        .compactor()
        .before_model_call(&mut history)
        .await;

    validate(&history).unwrap();
    assert_eq!(
        report.budget.saved,
        [".task_outputs/tool-results/toolu_30.txt"]
    );
    // Past 50 messages, snip cuts down to 25.
    assert_eq!(report.snipped, 38);
    assert_eq!(history.len(), 25);
    // 12 results survive the snip; the newest three keep their content:
    // with snip, micro-compact does not wait for a batch.
    assert_eq!(report.cleared, 9);
    assert_eq!(report.summary, None);
    assert!(report.tokens < 20_000, "{}", report.tokens);
    assert!(model.side_requests().is_empty(), "no model call was needed");
    // The newest result was saved before anything could clear it.
    let newest = first_result(&history[24]);
    assert!(newest.text().starts_with("<persisted-output>"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".task_outputs/tool-results/toolu_30.txt"))
            .unwrap()
            .len(),
        250_000
    );
    // Each layer reported what it did, in the pipeline's order.
    let notices: Vec<String> = agent
        .notices()
        .take()
        .into_iter()
        .filter(|notice| notice.tag == COMPACT)
        .map(|notice| notice.text)
        .collect();
    assert_eq!(notices.len(), 3, "{notices:?}");
    assert!(
        notices[0].starts_with("tool-result budget: ")
            && notices[0].contains("saved 1 result to .task_outputs/tool-results/"),
        "{notices:?}"
    );
    assert_eq!(
        notices[1],
        "snip: dropped 38 messages from the middle of the conversation"
    );
    assert_eq!(notices[2], "micro-compact: cleared 9 old tool results");
}

// ---- the subagent's history ---------------------------------------------------------

/// A reply that hands `description` to a subagent.
fn task(description: &str) -> Reply {
    Reply::tool(TASK_TOOL, json!({ "description": description }))
}

/// A reply that reads `path`.
fn read(path: &str) -> Reply {
    Reply::tool("read_file", json!({ "path": path }))
}

/// Writes `count` files of `chars` characters each under `dir/src/`, and
/// returns their paths relative to `dir`.
fn source_files(dir: &Path, count: usize, chars: usize) -> Vec<String> {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    (0..count)
        .map(|index| {
            let path = format!("src/file_{index:02}.rs");
            let line = format!("// file {index:02}: marker-{index:02}\n");
            let body = line.repeat(chars / line.len() + 1);
            std::fs::write(dir.join(&path), &body[..chars]).unwrap();
            path
        })
        .collect()
}

/// The requests a subagent made: the turn's requests without `task` among
/// their tools.
fn subagent_requests(model: &ScriptedModel) -> Vec<Value> {
    model
        .requests()
        .into_iter()
        .filter(|request| {
            !request["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|tool| tool["name"] == TASK_TOOL)
        })
        .collect()
}

#[tokio::test]
async fn a_subagent_reading_far_more_than_the_window_stays_under_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    // 24 files of 8,000 characters: some 48,000 tokens read in one task,
    // nearly ten times the threshold.
    let threshold = 5_000;
    let files = source_files(dir.path(), 24, 8_000);
    let description = "Read every source file under src/ and list their markers.";
    let mut replies = vec![task(description)];
    replies.extend(files.iter().map(|path| read(path)));
    replies.push(Reply::text("SUBAGENT: markers 00 to 23"));
    replies.push(Reply::text("done"));
    let model = Arc::new(
        ScriptedModel::new(replies)
            .with_side_rule(summary_rule(Reply::text("SUMMARY: read some files"))),
    );
    let mut agent = agent(dir.path(), model.clone(), small_threshold(threshold));
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "survey src").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    // The subagent finished, and the parent kept only its summary.
    validate(&history).unwrap();
    assert_eq!(history.len(), 4);
    let result = first_result(&history[2]);
    assert!(!result.is_error, "{}", result.text());
    assert!(result.text().ends_with("SUBAGENT: markers 00 to 23"));
    // Every request the subagent sent was a valid history under the
    // threshold, however much it had read.
    let requests = subagent_requests(&model);
    assert_eq!(requests.len(), files.len() + 1);
    let read_tokens = files.len() * 8_000 / 4;
    assert!(read_tokens > 9 * threshold, "{read_tokens}");
    for request in &requests {
        let messages = sent_messages(request);
        let tokens = estimate_tokens(&messages);
        assert!(tokens <= threshold, "{tokens} tokens: {request}");
    }
    // It took summaries to get there: made of the subagent's history, they
    // repeat its task as the current request.
    let summaries = summary_requests(&model);
    assert!(summaries.len() >= 2, "{}", summaries.len());
    assert!(
        summaries
            .iter()
            .all(|request| summary_input(request).contains(description))
    );
    let summarised = requests
        .iter()
        .map(|request| sent_messages(request)[0].text())
        .filter(|first| first.starts_with("[Compacted]"))
        .count();
    assert!(summarised >= summaries.len());
    let last = sent_messages(requests.last().unwrap());
    assert!(
        last[0]
            .text()
            .contains(&format!("The user's current request:\n{description}")),
        "{last:?}"
    );
    // The parent's compactor had nothing to do.
    assert!(recorder.notices_tagged(COMPACT).is_empty());
    assert_eq!(agent.hooks_mut().compactor().summary_failures(), 0);
    // The user saw the subagent compact, among its other notices.
    let sub = recorder.notices_tagged(SUBAGENT_TAG);
    assert!(
        sub.iter()
            .any(|notice| notice.starts_with("[compact] auto compact (~")),
        "{sub:?}"
    );
}

#[tokio::test]
async fn each_subagent_has_its_own_circuit_breaker() {
    let dir = tempfile::tempdir().unwrap();
    let files = source_files(dir.path(), 4, 10_000);
    // Every summary comes back empty, a failure that counts.
    let model = Arc::new(
        ScriptedModel::new(vec![
            task("Read the four files."),
            read(&files[0]),
            read(&files[1]),
            read(&files[2]),
            read(&files[3]),
            Reply::text("read four"),
            task("Read the first file again."),
            read(&files[0]),
            Reply::text("read one"),
            Reply::text("done"),
        ])
        .with_side_rule(summary_rule(Reply::text(""))),
    );
    // 2,000 tokens: one file puts a subagent over, the parent stays under.
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    // The first subagent's breaker opened after three failures, before its
    // fifth request; the second subagent started with a breaker of its own
    // and tried again.
    assert_eq!(summary_requests(&model).len(), 4);
    let sub = recorder.notices_tagged(SUBAGENT_TAG);
    let compact: Vec<&String> = sub
        .iter()
        .filter(|notice| {
            notice.starts_with("[compact] summary failed")
                || notice.starts_with("[compact] circuit breaker")
        })
        .collect();
    assert_eq!(compact.len(), 5, "{sub:?}");
    assert!(compact[0].starts_with("[compact] summary failed (1/3)"));
    assert!(compact[2].starts_with("[compact] summary failed (3/3)"));
    assert!(compact[3].starts_with("[compact] circuit breaker open"));
    assert!(compact[4].starts_with("[compact] summary failed (1/3)"));
    // Neither breaker is the parent's.
    let parent = agent.hooks_mut().compactor();
    assert_eq!(parent.summary_failures(), 0);
    assert!(!parent.breaker_open());
    assert!(recorder.notices_tagged(COMPACT).is_empty());
}

#[tokio::test]
async fn a_subagent_request_refused_as_too_long_is_compacted_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(
        vec![
            task("Echo three words."),
            echo("one"),
            echo("two"),
            echo("three"),
            Reply::error(ScriptedError::PromptTooLong),
            Reply::text("SUBAGENT: echoed three"),
            Reply::text("done"),
        ],
        vec![Reply::text("SUMMARY: echoed one")],
    );
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    let result = first_result(&history[2]);
    assert!(!result.is_error, "{}", result.text());
    assert!(result.text().ends_with("SUBAGENT: echoed three"));
    // The refused request, then the same turn of the subagent's, compacted.
    let requests = subagent_requests(&model);
    assert_eq!(requests.len(), 5);
    assert_eq!(sent_messages(&requests[3]).len(), 7);
    let retried = sent_messages(&requests[4]);
    assert!(retried[0].text().starts_with("[Reactive compact]"));
    assert!(retried[0].text().contains("SUMMARY: echoed one"));
    assert_eq!(summary_requests(&model).len(), 1);
    let sub = recorder.notices_tagged(SUBAGENT_TAG);
    assert!(
        sub.iter()
            .any(|notice| notice.starts_with("[compact] reactive compact: transcript saved")),
        "{sub:?}"
    );
}

// ---- the binary -------------------------------------------------------------------

#[tokio::test]
async fn over_the_wire_prompt_too_long_is_summarised_and_retried_once() {
    let dir = tempfile::tempdir().unwrap();
    let text_reply = |text: &str| {
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": text})],
            "end_turn",
        ))
    };
    let server = FakeServer::start(vec![
        FakeResponse::json(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        ),
        text_reply("SUMMARY: the user said hello"),
        text_reply("hello again"),
        // For the side queries of later lessons (memory extraction), if any.
        text_reply("[]"),
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "hello"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
        "",
    )
    .await;

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello again"), "{stdout}");
    assert!(
        !stdout.contains("SUMMARY"),
        "the summary is not streamed: {stdout}"
    );
    assert!(
        stderr.contains("[compact] reactive compact: transcript saved to .transcripts/"),
        "{stderr}"
    );
    let received: Vec<Value> = server
        .received()
        .iter()
        .map(|request| request.json())
        .collect();
    assert!(received.len() >= 3, "{received:?}");
    // The refused request, then the summary (no tools, the summariser's
    // prompt), then the same turn's request again.
    assert!(received[0].get("tools").is_some());
    assert!(received[1].get("tools").is_none());
    assert!(is_summary_request(&received[1]), "{}", received[1]);
    assert!(summary_input(&received[1]).contains("hello"));
    let retry = &received[2];
    assert!(retry.get("tools").is_some());
    let first = retry["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("[Reactive compact]"), "{first}");
    assert!(first.contains("SUMMARY: the user said hello"), "{first}");
    // Nothing else was a turn's request.
    assert!(
        received[3..]
            .iter()
            .all(|request| request.get("tools").is_none())
    );
    // The transcript holds what was refused: the prompt.
    let saved = transcripts(dir.path());
    assert_eq!(saved.len(), 1);
    let transcript = std::fs::read_to_string(&saved[0]).unwrap();
    let first_line: Message = serde_json::from_str(transcript.lines().next().unwrap()).unwrap();
    assert_eq!(first_line, Message::user_text("hello"));
}

#[tokio::test]
async fn a_compaction_setting_that_is_not_a_number_stops_the_lesson_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::run_binary(
        dir.path(),
        &["-p", "hello"],
        &[("COMPACT_THRESHOLD_TOKENS", "lots")],
        "",
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("COMPACT_THRESHOLD_TOKENS must be a whole number"),
        "{stderr}"
    );
    // Stopped before the model was asked anything: nothing was answered,
    // and nothing was written.
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
