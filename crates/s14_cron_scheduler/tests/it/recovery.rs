//! Error recovery (lesson 11): the backoff formula and its limits, retries
//! through the real loop, the fallback model, `max_tokens` escalation and
//! continuation, reactive compaction, a stream cut mid-reply — and, since
//! recovery is a model decorator every call goes through, the same retries
//! for the calls outside the loop: compaction summaries, memory's side
//! queries and subagents. Then the same over a local server speaking the
//! Anthropic wire format, in-process and through the lesson's binary.
//!
//! Every in-process test that waits runs with tokio's paused time: a
//! `sleep` returns at once and the clock jumps by exactly its length, so
//! the delays are asserted to the millisecond without anyone waiting for
//! them. The tests over a real socket cannot pause time (the HTTP client's
//! own timeouts would fire), so they use a 1 ms base delay instead and
//! assert no durations.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lesson::memory::{Memory, MemoryStore, MemoryType};
use lesson::recovery::backoff::{self, DelaySource};
use lesson::recovery::truncation::CONTINUATION_PROMPT;
use lesson::recovery::{RECOVERY_TAG, RecoveryEvent, RecoveryPolicy, XorShift};
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, TurnError};
use shared::error::ApiError;
use shared::history::validate;
use shared::model::anthropic::{AnthropicClient, AnthropicConfig};
use shared::model::config::{Secret, Timeouts};
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel, SideRule};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{Delta, Message, Request, Response, Role, StopReason};
use shared::testing::{FakeResponse, FakeServer, Recorder, anthropic_stream};
use tokio::time::Instant;

use crate::support::{self, turn};

/// The model the agent is built with.
const PRIMARY: &str = support::MODEL_ID;
const FALLBACK: &str = "fallback-model";

/// Text that only the compaction summary's request contains.
const SUMMARY_QUERY: &str = lesson::compact::summary::SYSTEM_PROMPT;
/// Text that only memory's recall side query contains.
const RECALL_QUERY: &str = "Which of these saved memories are relevant";
/// Text that only memory's extraction side query contains.
const EXTRACTION_QUERY: &str = "Read this dialogue between a user and a coding agent";

// ---- a model that can stage any failure -------------------------------------

/// One step of a [`Staged`] model's script.
enum Step {
    /// The next scripted reply.
    Reply(Reply),
    /// Fail with this error.
    Fail(ApiError),
    /// Stream this text, then break off.
    CutAfter(&'static str),
}

/// A model that plays replies and failures in order to the requests that
/// offer tools, including failures the scripted model cannot stage (a
/// `retry-after`, a 401, a stream that breaks after some text), and records
/// them. Side queries (no tools) go to the inner scripted model, which
/// answers them as it always does.
struct Staged {
    steps: Vec<Step>,
    next: AtomicUsize,
    inner: ScriptedModel,
    requests: Mutex<Vec<Value>>,
}

impl Staged {
    fn new(steps: Vec<Step>) -> Arc<Self> {
        let replies = steps
            .iter()
            .filter_map(|step| match step {
                Step::Reply(reply) => Some(reply.clone()),
                _ => None,
            })
            .collect();
        Arc::new(Self {
            steps,
            next: AtomicUsize::new(0),
            inner: ScriptedModel::new(replies),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Every request that offered tools, as sent.
    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// Steps not played yet.
    fn remaining(&self) -> usize {
        self.steps.len() - self.next.load(Ordering::SeqCst)
    }
}

impl Model for Staged {
    fn provider(&self) -> &str {
        "staged"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(async move {
            if request.tools.is_empty() {
                return self.inner.send(request, on_delta).await;
            }
            self.requests
                .lock()
                .unwrap()
                .push(serde_json::to_value(request).unwrap());
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            match self.steps.get(index) {
                Some(Step::Reply(_)) => self.inner.send(request, on_delta).await,
                Some(Step::Fail(error)) => Err(error.clone()),
                Some(Step::CutAfter(text)) => {
                    on_delta(Delta::Text(text));
                    Err(ApiError::StreamCutShort {
                        message: "the connection closed before message_stop".into(),
                    })
                }
                None => Err(ApiError::ScriptExhausted("no more steps".into())),
            }
        })
    }
}

// ---- helpers ---------------------------------------------------------------------

/// The course's policy with a fixed jitter seed, so every delay is known.
fn policy() -> RecoveryPolicy {
    RecoveryPolicy {
        jitter_seed: Some(42),
        ..RecoveryPolicy::default()
    }
}

/// The same policy without jitter, so every delay is the formula's.
fn exact() -> RecoveryPolicy {
    RecoveryPolicy {
        max_jitter_percent: 0,
        ..policy()
    }
}

/// [`exact`] with a fallback model.
fn with_fallback() -> RecoveryPolicy {
    RecoveryPolicy {
        fallback_model: Some(FALLBACK.into()),
        ..exact()
    }
}

/// The lesson's agent in `dir`, thinking with `model`, recovering by
/// `policy` (installed the one way there is: through the options).
fn agent(dir: &Path, model: Arc<dyn Model>, policy: RecoveryPolicy) -> Agent<lesson::LessonHooks> {
    support::agent_with(
        dir,
        model,
        lesson::Options {
            recovery: policy,
            ..support::options()
        },
    )
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// The waits recovery chose so far, in order.
fn delays(agent: &mut Agent<lesson::LessonHooks>) -> Vec<Duration> {
    agent
        .hooks_mut()
        .recovery()
        .events()
        .iter()
        .filter_map(|event| match event {
            RecoveryEvent::Retry { delay, .. } => Some(delay.duration),
            _ => None,
        })
        .collect()
}

/// Checks that the turn showed each of `events` as one notice tagged
/// `recovery`, in order, and no other recovery notice.
fn assert_shown(recorder: &Recorder, events: &[RecoveryEvent]) {
    let expected: Vec<String> = events.iter().map(ToString::to_string).collect();
    assert_eq!(recorder.notices_tagged(RECOVERY_TAG), expected);
}

/// The `model` field of each request.
fn models(requests: &[Value]) -> Vec<String> {
    requests
        .iter()
        .map(|request| request["model"].as_str().unwrap().to_string())
        .collect()
}

/// The messages a request sent, checked to be a valid history, without
/// lesson 10's cache breakpoints (they go on the copy that is sent, never
/// into the history, so a comparison with the history leaves them out).
fn sent_messages(request: &Value) -> Vec<Message> {
    let mut sent = request["messages"].clone();
    for message in sent.as_array_mut().into_iter().flatten() {
        for block in message["content"].as_array_mut().into_iter().flatten() {
            if let Some(block) = block.as_object_mut() {
                block.remove("cache_control");
            }
        }
    }
    let messages: Vec<Message> = serde_json::from_value(sent).unwrap();
    validate(&messages).unwrap();
    messages
}

/// The `max_tokens` of each request.
fn limits(requests: &[Value]) -> Vec<u64> {
    requests
        .iter()
        .map(|request| request["max_tokens"].as_u64().unwrap())
        .collect()
}

fn write(path: &str) -> Reply {
    Reply::tool("write_file", json!({"path": path, "content": "x"}))
}

fn overloaded() -> Reply {
    Reply::error(ScriptedError::Overloaded)
}

fn cut(text: &str) -> Reply {
    Reply::text(text).with_stop_reason(StopReason::MaxTokens)
}

/// Puts one memory in the workspace's store, so that the next turn starts
/// with a recall side query.
fn remember_tabs(dir: &Path) {
    MemoryStore::at(dir.join(lesson::memory::file::MEMORY_DIR))
        .write(&Memory::new(
            "tabs",
            MemoryType::User,
            "the user prefers tabs",
            "Indent with tabs, never spaces (memory-body-42).",
        ))
        .unwrap();
}

/// What the extraction side query answers when there is something new.
fn one_new_memory() -> String {
    json!([{
        "name": "user-likes-short-answers",
        "type": "feedback",
        "description": "The user wants short answers",
        "body": "Keep answers short."
    }])
    .to_string()
}

// ---- the backoff formula -------------------------------------------------------

#[test]
fn the_policy_defaults_are_the_courses() {
    let policy = RecoveryPolicy::default();
    assert_eq!(policy.max_attempts, 10);
    assert_eq!(policy.base_delay, ms(500));
    assert_eq!(policy.max_delay, ms(32_000));
    assert_eq!(policy.max_jitter_percent, 25);
    assert_eq!(policy.max_retry_after, Duration::from_secs(60));
    assert_eq!(policy.overloads_before_fallback, 3);
    assert_eq!(policy.fallback_model, None);
    assert_eq!(policy.escalated_max_tokens, 64_000);
    // Claude Opus 4 and 4.1 write at most 32,000 tokens a reply.
    assert_eq!(policy.escalated_max_tokens_for("claude-opus-4-1"), 32_000);
    assert_eq!(policy.escalated_max_tokens_for("claude-sonnet-4-5"), 64_000);
    assert_eq!(policy.max_continuations, 3);
    assert_eq!(policy.jitter_seed, None);
    // The terminal prints a notice as `[tag] text`: these are `[recovery]`.
    assert_eq!(RECOVERY_TAG, "recovery");
}

#[test]
fn backoff_doubles_from_half_a_second_and_stops_at_32_seconds() {
    let policy = policy();
    let waits: Vec<Duration> = (0..9).map(|n| backoff::backoff(&policy, n)).collect();
    assert_eq!(
        waits,
        [500, 1000, 2000, 4000, 8000, 16000, 32000, 32000, 32000].map(ms)
    );
    // No overflow however many attempts failed.
    for n in [31, 63, 64, 1000, u32::MAX] {
        assert_eq!(backoff::backoff(&policy, n), ms(32_000), "{n}");
    }
    // The base is configurable (RECOVERY_BASE_DELAY_MS).
    let fast = RecoveryPolicy {
        base_delay: ms(1),
        ..policy
    };
    assert_eq!(backoff::backoff(&fast, 3), ms(8));
}

#[test]
fn jitter_adds_up_to_a_quarter_and_is_reproducible_from_the_seed() {
    let policy = policy();
    for failed in 0..10 {
        let base = backoff::backoff(&policy, failed);
        let mut rng = XorShift::new(7);
        let draws: Vec<Duration> = (0..1000)
            .map(|_| backoff::with_jitter(&policy, failed, &mut rng))
            .collect();
        for draw in &draws {
            assert!(
                *draw >= base && *draw <= base * 5 / 4,
                "{draw:?} for {base:?}"
            );
        }
        // The jitter really spreads the waits over the range.
        let least = draws.iter().min().unwrap();
        let most = draws.iter().max().unwrap();
        assert!(*least < base + base / 20, "{least:?} for {base:?}");
        assert!(*most > base + base / 5, "{most:?} for {base:?}");
        // The same seed draws the same waits.
        let mut again = XorShift::new(7);
        let replay: Vec<Duration> = (0..1000)
            .map(|_| backoff::with_jitter(&policy, failed, &mut again))
            .collect();
        assert_eq!(draws, replay);
    }
    // Without jitter the wait is exactly the formula's.
    let mut rng = XorShift::new(7);
    assert_eq!(backoff::with_jitter(&exact(), 2, &mut rng), ms(2000));
}

#[test]
fn retry_after_replaces_the_computed_wait_within_a_cap() {
    let policy = policy();
    let mut rng = XorShift::new(1);
    let asked = backoff::retry_delay(&policy, 5, Some(Duration::from_secs(3)), &mut rng);
    assert_eq!(asked.duration, Duration::from_secs(3));
    assert_eq!(asked.source, DelaySource::RetryAfter);
    assert_eq!(asked.to_string(), "3.0s (retry-after)");
    let zero = backoff::retry_delay(&policy, 5, Some(Duration::ZERO), &mut rng);
    assert_eq!(zero.duration, Duration::ZERO);
    let greedy = backoff::retry_delay(&policy, 0, Some(Duration::from_secs(3600)), &mut rng);
    assert_eq!(greedy.duration, Duration::from_secs(60));
    let computed = backoff::retry_delay(&policy, 1, None, &mut rng);
    assert_eq!(computed.source, DelaySource::Backoff);
    assert!(computed.duration >= ms(1000) && computed.duration <= ms(1250));
}

// ---- transient failures through the loop --------------------------------------

#[tokio::test(start_paused = true)]
async fn transient_failures_wait_exactly_the_backoff_then_send_the_same_request() {
    let dir = tempfile::tempdir().unwrap();
    let model = Staged::new(vec![
        Step::Reply(write("a.txt")),
        Step::Fail(ApiError::Server {
            status: 502,
            message: "bad gateway".into(),
        }),
        Step::Fail(ApiError::Network {
            message: "connection reset".into(),
        }),
        Step::Fail(ApiError::Timeout(Duration::from_secs(90))),
        Step::Reply(Reply::text("done")),
    ]);
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();

    let start = Instant::now();
    let (outcome, recorder) = turn(&mut agent, &mut history, "go").await;
    let outcome = outcome.unwrap();

    assert_eq!(outcome.final_text, "done");
    assert!(dir.path().join("a.txt").is_file());
    assert_eq!(start.elapsed(), ms(500 + 1000 + 2000));
    assert_eq!(delays(&mut agent), [ms(500), ms(1000), ms(2000)]);
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    // Nothing was appended between the attempts: each is the same request,
    // the tool round whole.
    for retry in &requests[2..] {
        assert_eq!(retry, &requests[1]);
    }
    assert_eq!(sent_messages(&requests[1]).len(), 3);
    validate(&history).unwrap();
    assert_eq!(history.len(), 4);
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events[0].to_string(),
        "502 server error — attempt 2/10 in 500ms"
    );
    assert_eq!(
        events[1].to_string(),
        "network error — attempt 3/10 in 1.0s"
    );
    assert_eq!(events[2].to_string(), "timed out — attempt 4/10 in 2.0s");
    assert_shown(&recorder, &events);
}

#[tokio::test(start_paused = true)]
async fn with_jitter_each_wait_is_within_a_quarter_of_the_formula_and_really_waited() {
    let script = || {
        Arc::new(ScriptedModel::new(vec![
            Reply::error(ScriptedError::RateLimited),
            Reply::error(ScriptedError::Server),
            Reply::error(ScriptedError::RateLimited),
            Reply::text("done"),
        ]))
    };
    let dir = tempfile::tempdir().unwrap();
    let mut agent = agent(dir.path(), script(), policy());
    let start = Instant::now();
    turn(&mut agent, &mut Vec::new(), "go").await.0.unwrap();

    let waits = delays(&mut agent);
    assert_eq!(waits.len(), 3);
    for (wait, base) in waits.iter().zip([500, 1000, 2000].map(ms)) {
        assert!(*wait >= base && *wait <= base * 5 / 4, "{wait:?}");
    }
    assert_eq!(start.elapsed(), waits.iter().sum::<Duration>());

    // The seed fixes the draws: a second agent with the same seed waits
    // exactly as long, and one with another seed does not.
    let mut twin = self::agent(dir.path(), script(), policy());
    turn(&mut twin, &mut Vec::new(), "go").await.0.unwrap();
    assert_eq!(delays(&mut twin), waits);
    let reseeded = RecoveryPolicy {
        jitter_seed: Some(7),
        ..policy()
    };
    let mut other = self::agent(dir.path(), script(), reseeded);
    turn(&mut other, &mut Vec::new(), "go").await.0.unwrap();
    assert_ne!(delays(&mut other), waits);
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_and_capped() {
    let dir = tempfile::tempdir().unwrap();
    let limited = |seconds| {
        Step::Fail(ApiError::RateLimited {
            retry_after: Some(Duration::from_secs(seconds)),
            message: "slow down".into(),
        })
    };
    let model = Staged::new(vec![
        limited(3),
        limited(7200),
        Step::Reply(Reply::text("done")),
    ]);
    // Jitter on: a wait the server chose gets none.
    let mut agent = agent(dir.path(), model.clone(), policy());
    let start = Instant::now();

    let (outcome, recorder) = turn(&mut agent, &mut Vec::new(), "go").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(start.elapsed(), Duration::from_secs(3 + 60));
    assert_eq!(
        delays(&mut agent),
        [Duration::from_secs(3), Duration::from_secs(60)]
    );
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events[0].to_string(),
        "429 rate limited — attempt 2/10 in 3.0s (retry-after)"
    );
    assert_eq!(
        events[1].to_string(),
        "429 rate limited — attempt 3/10 in 60.0s (retry-after)"
    );
    assert_shown(&recorder, &events);
}

#[tokio::test(start_paused = true)]
async fn after_ten_attempts_the_error_ends_the_turn_with_a_valid_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies = vec![write("a.txt")];
    replies.extend((0..10).map(|_| overloaded()));
    replies.push(Reply::text("the next turn works"));
    let model = Arc::new(ScriptedModel::new(replies));
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();
    let start = Instant::now();

    let (outcome, recorder) = turn(&mut agent, &mut history, "go").await;

    let error = outcome.unwrap_err();
    assert!(
        matches!(error, TurnError::Api(ApiError::Overloaded { .. })),
        "{error:?}"
    );
    // Ten attempts at the second request, nine waits between them; a turn
    // that ends in an error has no extraction side query.
    assert_eq!(model.requests().len(), 11);
    assert_eq!(model.remaining(), 1);
    assert!(model.side_requests().is_empty());
    assert_eq!(
        start.elapsed(),
        ms(500 + 1000 + 2000 + 4000 + 8000 + 16000 + 32000 * 3)
    );
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events.last().unwrap().to_string(),
        "529 overloaded — giving up after 10 attempts"
    );
    assert!(events.contains(&RecoveryEvent::NoFallback {
        overloads: 3,
        model: PRIMARY.into()
    }));
    // Nine waits, the "no fallback" note, the giving up.
    assert_eq!(events.len(), 11);
    assert_shown(&recorder, &events);
    // The tool round is whole; the failed call added nothing.
    validate(&history).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(history[2].role, Role::User);

    // The session goes on.
    let (outcome, _) = turn(&mut agent, &mut history, "again").await;
    assert_eq!(outcome.unwrap().final_text, "the next turn works");
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
}

#[tokio::test(start_paused = true)]
async fn errors_a_retry_cannot_fix_are_returned_at_once() {
    for (error, label) in [
        (
            ApiError::Authentication {
                message: "invalid x-api-key".into(),
            },
            "authentication failed",
        ),
        (
            ApiError::InvalidRequest {
                message: "messages: field required".into(),
            },
            "400 invalid request",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let model = Staged::new(vec![
            Step::Fail(error.clone()),
            Step::Reply(Reply::text("never sent")),
        ]);
        let mut agent = agent(dir.path(), model.clone(), with_fallback());
        let mut history = Vec::new();
        let start = Instant::now();

        let (outcome, recorder) = turn(&mut agent, &mut history, "go").await;

        assert_eq!(outcome.unwrap_err(), TurnError::Api(error));
        assert_eq!(model.requests().len(), 1, "{label}");
        assert_eq!(model.remaining(), 1, "{label}");
        assert_eq!(start.elapsed(), Duration::ZERO, "{label}");
        let events = agent.hooks_mut().recovery().events();
        assert_eq!(
            events,
            [RecoveryEvent::NotRetried {
                failure: label.into()
            }]
        );
        assert_shown(&recorder, &events);
        assert_eq!(history, [Message::user_text("go")]);
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_during_a_wait_ends_the_turn_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new((0..10).map(|_| overloaded()).collect()));
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(ms(100)).await;
        canceller.cancel();
    });
    let start = Instant::now();

    let error = agent
        .run_turn(&mut history, "go", &mut Recorder::default(), &cancel)
        .await
        .unwrap_err();

    // Cancelled 100 ms into the first 500 ms wait: no second attempt.
    assert_eq!(error, TurnError::Cancelled);
    assert_eq!(start.elapsed(), ms(100));
    assert_eq!(model.requests().len(), 1);
    validate(&history).unwrap();
}

// ---- the fallback model ---------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn three_overloads_in_a_row_switch_the_rest_of_the_turn_to_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        overloaded(),
        overloaded(),
        overloaded(),
        write("a.txt"),
        Reply::text("done on the fallback"),
        Reply::text("next turn"),
    ]));
    let mut agent = agent(dir.path(), model.clone(), with_fallback());
    let mut history = Vec::new();
    let start = Instant::now();

    let (outcome, recorder) = turn(&mut agent, &mut history, "go").await;

    assert_eq!(outcome.unwrap().final_text, "done on the fallback");
    assert!(dir.path().join("a.txt").is_file());
    // Two waits; the switch itself sends at once.
    assert_eq!(start.elapsed(), ms(500 + 1000));
    assert_eq!(
        models(&model.requests()),
        [PRIMARY, PRIMARY, PRIMARY, FALLBACK, FALLBACK]
    );
    // Memory's extraction goes through the same model stack, so it asks
    // the turn's fallback too.
    assert_eq!(models(&model.side_requests()), [FALLBACK]);
    assert!(agent.hooks_mut().recovery().on_fallback());
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events[2],
        RecoveryEvent::Fallback {
            overloads: 3,
            from: PRIMARY.into(),
            to: FALLBACK.into()
        }
    );
    assert_eq!(
        events[2].to_string(),
        "3 overloaded replies in a row — switching from test to fallback-model for the rest of \
         this turn"
    );
    assert_eq!(events.len(), 3);
    assert_shown(&recorder, &events);
    validate(&history).unwrap();

    // A new turn tries the primary model again, its side query too.
    turn(&mut agent, &mut history, "again").await.0.unwrap();
    assert_eq!(models(&model.requests())[5], PRIMARY);
    assert_eq!(models(&model.side_requests()), [FALLBACK, PRIMARY]);
    assert_eq!(model.remaining(), 0);
    assert!(!agent.hooks_mut().recovery().on_fallback());
}

#[tokio::test(start_paused = true)]
async fn after_the_switch_summaries_and_memory_side_queries_go_to_the_fallback_too() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(
        ScriptedModel::new(vec![
            overloaded(),
            overloaded(),
            overloaded(),
            // On the fallback: the model asks for a summary of the history.
            Reply::tool("compact", json!({})),
            Reply::text("done"),
        ])
        .with_side_rule(SideRule::new(
            SUMMARY_QUERY,
            Reply::text("SUMMARY: the user said go"),
        )),
    );
    let mut agent = agent(dir.path(), model.clone(), with_fallback());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "go").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(
        models(&model.requests()),
        [PRIMARY, PRIMARY, PRIMARY, FALLBACK, FALLBACK]
    );
    // The summary (made before the last call) and the extraction (after
    // the turn) asked the fallback, like the loop's calls.
    let side = model.side_requests();
    assert_eq!(side.len(), 2);
    assert!(side[0].to_string().contains(SUMMARY_QUERY));
    assert!(side[1].to_string().contains(EXTRACTION_QUERY));
    assert_eq!(models(&side), [FALLBACK, FALLBACK]);
    // The summary really replaced the history.
    let last = sent_messages(&model.requests()[4]);
    assert!(last[0].text().starts_with("[Compacted]"), "{last:?}");
    assert!(last[0].text().contains("SUMMARY: the user said go"));
    assert!(
        recorder
            .notices_tagged("compact")
            .iter()
            .any(|text| text.starts_with("auto compact (the model called compact)")),
        "{:?}",
        recorder.notices
    );
    assert!(
        recorder
            .notices_tagged(RECOVERY_TAG)
            .iter()
            .any(|text| text.contains("switching from test to fallback-model")),
        "{:?}",
        recorder.notices
    );
    validate(&history).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_reply_or_another_failure_resets_the_overload_count() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        overloaded(),
        overloaded(),
        write("a.txt"), // success: the count starts again
        overloaded(),
        overloaded(),
        Reply::error(ScriptedError::Server), // not an overload: starts again
        overloaded(),
        overloaded(),
        Reply::text("done"),
    ]));
    let mut agent = agent(dir.path(), model.clone(), with_fallback());
    let mut history = Vec::new();

    let (outcome, _) = turn(&mut agent, &mut history, "go").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    assert!(models(&model.requests()).iter().all(|id| id == PRIMARY));
    assert!(
        models(&model.side_requests())
            .iter()
            .all(|id| id == PRIMARY)
    );
    assert!(!agent.hooks_mut().recovery().on_fallback());
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(events.len(), 7, "{events:?}");
    assert!(
        events
            .iter()
            .all(|event| matches!(event, RecoveryEvent::Retry { .. }))
    );
    validate(&history).unwrap();
}

// ---- max_tokens ---------------------------------------------------------------------

#[tokio::test]
async fn max_tokens_escalates_once_then_continues_three_times_then_stops() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        cut("dropped draft"),
        cut("part 1"),
        cut("part 2"),
        cut("part 3"),
        cut("part 4"),
        Reply::text("fresh"),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "write a lot").await;

    // The loop gets the last cut reply, marked as such.
    let outcome = outcome.unwrap();
    assert!(outcome.truncated);
    assert_eq!(outcome.final_text, "part 4");
    let requests = model.requests();
    assert_eq!(limits(&requests), [8000, 64000, 64000, 64000, 64000]);
    // The extraction side query keeps its own limit: escalation belongs to
    // the loop's calls.
    let side = model.side_requests();
    assert_eq!(side.len(), 1);
    assert_eq!(
        side[0]["max_tokens"],
        lesson::memory::extract::EXTRACT_MAX_TOKENS
    );
    // Escalation sends the same request: the cut draft is not appended.
    assert_eq!(requests[1]["messages"], requests[0]["messages"]);
    assert!(!requests[1].to_string().contains("dropped draft"));
    // Each continuation keeps the partial reply and asks for more.
    let third = sent_messages(&requests[2]);
    assert_eq!(third.len(), 3);
    assert_eq!(third[1], Message::assistant_text("part 1"));
    assert!(third[2].text().starts_with(CONTINUATION_PROMPT));
    // Nothing but text was cut, so the prompt says no call was dropped.
    assert!(!third[2].text().contains("were dropped"));
    validate(&history).unwrap();
    let texts: Vec<String> = history
        .iter()
        .filter(|message| message.role == Role::Assistant)
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["part 1", "part 2", "part 3", "part 4"]);
    assert_eq!(history.len(), 8);
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events[0],
        RecoveryEvent::Escalated {
            from: 8000,
            to: 64000
        }
    );
    assert_eq!(
        events[1..4]
            .iter()
            .map(|event| match event {
                RecoveryEvent::Continuation { number, .. } => *number,
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(events[4], RecoveryEvent::ContinuationsSpent { max: 3 });
    assert_eq!(events.len(), 5);
    assert_shown(&recorder, &events);

    // The next turn starts again from the loop's limit.
    turn(&mut agent, &mut history, "short answer")
        .await
        .0
        .unwrap();
    assert_eq!(model.requests()[5]["max_tokens"], 8000);
}

#[tokio::test]
async fn after_escalation_the_rest_of_the_turn_keeps_the_larger_limit() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        cut("draft"),
        write("a.txt"),
        Reply::text("done"),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.0.unwrap();
    assert_eq!(limits(&model.requests()), [8000, 64000, 64000]);
    assert_eq!(model.remaining(), 0);
    assert!(dir.path().join("a.txt").is_file());
    validate(&history).unwrap();
}

#[tokio::test]
async fn a_tool_call_cut_off_by_max_tokens_is_dropped_not_run_and_the_model_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let cut_call = |text: &str| {
        Reply::text(text)
            .and_tool(
                "write_file",
                json!({"path": "half.txt", "content": "unfinished"}),
            )
            .with_stop_reason(StopReason::MaxTokens)
    };
    let model = Arc::new(ScriptedModel::new(vec![
        cut_call("Writing it:"),
        cut_call("Writing it now:"),
        // Only a tool call, cut again: no text to keep.
        Reply::tool(
            "write_file",
            json!({"path": "half.txt", "content": "again"}),
        )
        .with_stop_reason(StopReason::MaxTokens),
        Reply::tool(
            "write_file",
            json!({"path": "whole.txt", "content": "small"}),
        ),
        Reply::text("done"),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "write the file").await;

    outcome.unwrap();
    assert_eq!(model.remaining(), 0);
    assert!(!dir.path().join("half.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("whole.txt")).unwrap(),
        "small"
    );
    // Only the whole call ran.
    assert_eq!(recorder.calls.len(), 1);
    assert_eq!(recorder.calls[0].input["path"], "whole.txt");
    validate(&history).unwrap();
    // user, the kept text, user (continue ×2 in one message), the call,
    // its result, done.
    assert_eq!(history.len(), 6);
    assert_eq!(history[1], Message::assistant_text("Writing it now:"));
    let prompts = history[2].text();
    assert_eq!(prompts.matches(CONTINUATION_PROMPT).count(), 2, "{prompts}");
    assert!(prompts.contains("(`write_file`) were dropped and did not run"));
    assert!(prompts.contains("None of the cut-off reply's text was kept"));
    // Every request on the way was a valid history.
    for request in model.requests() {
        sent_messages(&request);
    }
    let dropped: Vec<Vec<String>> = agent
        .hooks_mut()
        .recovery()
        .events()
        .iter()
        .filter_map(|event| match event {
            RecoveryEvent::Continuation { dropped_calls, .. } => Some(dropped_calls.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, [["write_file"], ["write_file"]]);
    assert!(
        recorder
            .notices_tagged(RECOVERY_TAG)
            .iter()
            .any(|text| text.ends_with("(1/3); dropped the unfinished tool calls: write_file")),
        "{:?}",
        recorder.notices
    );
}

// ---- a model whose output cap is below the escalated limit ------------------------------

/// What the Anthropic API says to `max_tokens` 64000 on a model that writes
/// at most 32,000 tokens.
const OVER_THE_CAP: &str = "max_tokens: 64000 > 32000, which is the maximum allowed number of \
output tokens for claude-opus-4-20250514";

fn over_the_cap() -> ApiError {
    ApiError::InvalidRequest {
        message: OVER_THE_CAP.into(),
    }
}

#[tokio::test]
async fn a_refused_escalation_continues_the_cut_reply_and_the_cap_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let model = Staged::new(vec![
        Step::Reply(cut("Part one,")),
        Step::Fail(over_the_cap()),
        Step::Reply(Reply::text("part two.")),
        // The next turn escalates straight to the cap, which is accepted.
        Step::Reply(cut("dropped draft")),
        Step::Reply(Reply::text("whole answer")),
    ]);
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "write a lot").await;

    // The turn went on: the reply cut at 8000 was kept, and continued at
    // the cap rather than lost with the refusal.
    let outcome = outcome.unwrap();
    assert_eq!(outcome.final_text, "part two.");
    assert!(!outcome.truncated);
    validate(&history).unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[1], Message::assistant_text("Part one,"));
    assert!(history[2].text().starts_with(CONTINUATION_PROMPT));
    assert_eq!(history[3], Message::assistant_text("part two."));
    let requests = model.requests();
    assert_eq!(limits(&requests), [8000, 64000, 32000]);
    assert_eq!(requests[1]["messages"], requests[0]["messages"]);
    assert_eq!(sent_messages(&requests[2])[..3], history[..3]);
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events,
        [
            RecoveryEvent::Escalated {
                from: 8000,
                to: 64000
            },
            // The stack does not send the same request again ...
            RecoveryEvent::NotRetried {
                failure: "400 invalid request".into()
            },
            // ... and the hooks' half sends a smaller one.
            RecoveryEvent::OutputCapped {
                model: PRIMARY.into(),
                refused: 64000,
                cap: Some(32000),
                limit: 32000
            },
            RecoveryEvent::Continuation {
                number: 1,
                max: 3,
                dropped_calls: Vec::new()
            },
        ]
    );
    assert_shown(&recorder, &events);
    assert_eq!(
        agent.hooks_mut().recovery().output_cap(PRIMARY),
        Some(32000)
    );

    // The cap holds for the session: the next turn's escalation stops there.
    let (outcome, recorder) = turn(&mut agent, &mut history, "again").await;
    assert_eq!(outcome.unwrap().final_text, "whole answer");
    assert_eq!(model.remaining(), 0);
    assert_eq!(limits(&model.requests()[3..]), [8000, 32000]);
    assert_shown(
        &recorder,
        &[RecoveryEvent::Escalated {
            from: 8000,
            to: 32000,
        }],
    );
    validate(&history).unwrap();
}

#[tokio::test]
async fn a_refusal_that_states_no_cap_ends_escalation_for_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let model = Staged::new(vec![
        Step::Reply(cut("Part one,")),
        Step::Fail(ApiError::InvalidRequest {
            message: "max_tokens is too large for this model".into(),
        }),
        Step::Reply(Reply::text("part two.")),
        // The next turn's cut reply is continued at once, at the loop's
        // limit: no escalation the model is known to refuse.
        Step::Reply(cut("Next,")),
        Step::Reply(Reply::text("the end.")),
    ]);
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "write a lot").await;
    assert_eq!(outcome.unwrap().final_text, "part two.");
    let capped = RecoveryEvent::OutputCapped {
        model: PRIMARY.into(),
        refused: 64000,
        cap: None,
        limit: 8000,
    };
    assert!(
        recorder
            .notices_tagged(RECOVERY_TAG)
            .contains(&capped.to_string()),
        "{:?}",
        recorder.notices
    );
    assert_eq!(agent.hooks_mut().recovery().output_cap(PRIMARY), Some(8000));

    let (outcome, recorder) = turn(&mut agent, &mut history, "again").await;
    assert_eq!(outcome.unwrap().final_text, "the end.");
    assert_eq!(model.remaining(), 0);
    assert_eq!(limits(&model.requests()), [8000, 64000, 8000, 8000, 8000]);
    assert_shown(
        &recorder,
        &[RecoveryEvent::Continuation {
            number: 1,
            max: 3,
            dropped_calls: Vec::new(),
        }],
    );
    validate(&history).unwrap();
}

#[tokio::test]
async fn a_context_overflow_of_the_escalated_request_is_the_limit_not_the_history() {
    let dir = tempfile::tempdir().unwrap();
    // The same messages were answered at 8000: only the limit grew, so the
    // history is not compacted.
    let model = Staged::new(vec![
        Step::Reply(cut("Part one,")),
        Step::Fail(ApiError::PromptTooLong {
            message: "This model's maximum context length is 32768 tokens. However, you \
                      requested 64025 tokens (25 in the messages, 64000 in the completion)."
                .into(),
        }),
        Step::Reply(Reply::text("part two.")),
    ]);
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "write a lot").await;

    assert_eq!(outcome.unwrap().final_text, "part two.");
    assert_eq!(model.remaining(), 0);
    assert_eq!(limits(&model.requests()), [8000, 64000, 8000]);
    assert!(
        !model
            .inner
            .side_requests()
            .iter()
            .any(|request| request.to_string().contains(SUMMARY_QUERY)),
        "no summary was asked for"
    );
    assert_eq!(history[1], Message::assistant_text("Part one,"));
    validate(&history).unwrap();
    assert_shown(
        &recorder,
        &[
            RecoveryEvent::Escalated {
                from: 8000,
                to: 64000,
            },
            RecoveryEvent::OutputCapped {
                model: PRIMARY.into(),
                refused: 64000,
                cap: None,
                limit: 8000,
            },
            RecoveryEvent::Continuation {
                number: 1,
                max: 3,
                dropped_calls: Vec::new(),
            },
        ],
    );
}

#[tokio::test]
async fn any_other_refusal_of_the_escalated_request_is_still_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = Staged::new(vec![
        Step::Reply(cut("Part one,")),
        Step::Fail(ApiError::InvalidRequest {
            message: "messages: text content blocks must be non-empty".into(),
        }),
    ]);
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();
    let (outcome, _) = turn(&mut agent, &mut history, "write a lot").await;
    assert!(
        matches!(
            outcome,
            Err(TurnError::Api(ApiError::InvalidRequest { .. }))
        ),
        "{outcome:?}"
    );
    assert_eq!(model.remaining(), 0);
    assert_eq!(agent.hooks_mut().recovery().output_cap(PRIMARY), None);
    validate(&history).unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_escalated_limit_is_the_one_set_for_the_model_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        cut("draft"),
        Reply::text("whole"),
        // The next turn moves to the fallback model, which has a table
        // entry of its own.
        overloaded(),
        overloaded(),
        overloaded(),
        cut("draft"),
        Reply::text("whole"),
    ]));
    let policy = RecoveryPolicy {
        escalated_max_tokens_by_model: [(FALLBACK.to_string(), 16_000)].into(),
        escalated_max_tokens: 48_000,
        ..with_fallback()
    };
    let mut agent = agent(dir.path(), model.clone(), policy);
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.0.unwrap();
    turn(&mut agent, &mut history, "again").await.0.unwrap();
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert_eq!(
        limits(&requests),
        [8000, 48000, 8000, 8000, 8000, 8000, 16000]
    );
    assert_eq!(
        models(&requests[5..]),
        [FALLBACK.to_string(), FALLBACK.to_string()]
    );
    validate(&history).unwrap();
}

// ---- reactive compaction -------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn prompt_too_long_is_compacted_once_even_between_retries() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(
        ScriptedModel::new(vec![
            write("a.txt"),
            write("b.txt"),
            write("c.txt"),
            overloaded(),
            Reply::error(ScriptedError::PromptTooLong),
            overloaded(),
            Reply::text("done"),
        ])
        .with_side_rule(SideRule::new(
            SUMMARY_QUERY,
            Reply::text("SUMMARY: wrote a"),
        )),
    );
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "write three files").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    // The overload and the refusal were answers to the same request; the
    // compacted one is a new request.
    assert_eq!(requests[4], requests[3]);
    assert_eq!(requests[6], requests[5]);
    let last = sent_messages(&requests[6]);
    assert!(last[0].text().starts_with("[Reactive compact]"));
    assert!(last[0].text().contains("SUMMARY: wrote a"));
    assert_eq!(last.len(), 5);
    validate(&history).unwrap();
    // The compacted request is a different request, so its overload is
    // the first failure of its own: the same first wait again.
    assert_eq!(delays(&mut agent), [ms(500), ms(500)]);
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events
            .iter()
            .filter(|event| **event == RecoveryEvent::Compacting)
            .count(),
        1
    );
    assert_shown(&recorder, &events);
    assert!(
        recorder
            .notices_tagged("compact")
            .iter()
            .any(|text| text.starts_with("reactive compact: transcript saved to")),
        "{:?}",
        recorder.notices
    );
}

#[tokio::test]
async fn a_second_prompt_too_long_after_compaction_is_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(
        ScriptedModel::new(vec![
            Reply::error(ScriptedError::PromptTooLong),
            Reply::error(ScriptedError::PromptTooLong),
            Reply::text("never sent"),
        ])
        .with_side_rule(SideRule::new(SUMMARY_QUERY, Reply::text("SUMMARY"))),
    );
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();
    let (outcome, recorder) = turn(&mut agent, &mut history, "go").await;
    assert!(matches!(
        outcome.unwrap_err(),
        TurnError::Api(ApiError::PromptTooLong { .. })
    ));
    assert_eq!(model.remaining(), 1);
    // One summary, no extraction: the turn did not end well.
    assert_eq!(model.side_requests().len(), 1);
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events,
        [RecoveryEvent::Compacting, RecoveryEvent::StillTooLong]
    );
    assert_shown(&recorder, &events);
    validate(&history).unwrap();
}

// ---- a stream cut mid-reply ------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_stream_cut_mid_reply_is_retried_whole_and_only_the_whole_reply_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let model = Staged::new(vec![
        Step::CutAfter("Hello, wor"),
        Step::Fail(ApiError::Timeout(Duration::from_secs(90))),
        Step::Reply(Reply::text("Hello, world.")),
    ]);
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "greet").await;

    assert_eq!(outcome.unwrap().final_text, "Hello, world.");
    // The broken beginning was shown, then the whole reply streamed again.
    assert_eq!(recorder.text, "Hello, worHello, world.");
    assert_eq!(
        history,
        [
            Message::user_text("greet"),
            Message::assistant_text("Hello, world.")
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1], requests[0]);
    assert_eq!(requests[2], requests[0]);
    let events = agent.hooks_mut().recovery().events();
    let restreams: Vec<bool> = events
        .iter()
        .map(|event| match event {
            RecoveryEvent::Retry { restreams, .. } => *restreams,
            other => panic!("{other:?}"),
        })
        .collect();
    // Only the attempt that had shown text says it will stream again.
    assert_eq!(restreams, [true, false]);
    assert_eq!(
        events[0].to_string(),
        "stream cut short — attempt 2/10 in 500ms; the text shown so far was not kept, and the \
         reply will stream again"
    );
    assert!(
        events[1]
            .to_string()
            .starts_with("timed out — attempt 3/10")
    );
    assert_shown(&recorder, &events);
}

// ---- the calls outside the loop: summaries, memory, subagents -----------------------------

#[tokio::test(start_paused = true)]
async fn a_rate_limited_summary_call_waits_and_is_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(
        ScriptedModel::new(vec![Reply::tool("compact", json!({})), Reply::text("done")])
            // The first summary request is refused, the second answered.
            .with_side_rule(
                SideRule::new(SUMMARY_QUERY, Reply::error(ScriptedError::RateLimited)).times(1),
            )
            .with_side_rule(SideRule::new(
                SUMMARY_QUERY,
                Reply::text("SUMMARY: the model asked to compact"),
            )),
    );
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();
    let start = Instant::now();

    let (outcome, recorder) = turn(&mut agent, &mut history, "go").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(start.elapsed(), ms(500));
    assert_eq!(delays(&mut agent), [ms(500)]);
    // The same summary request twice, then the extraction.
    let side = model.side_requests();
    assert_eq!(side.len(), 3);
    assert_eq!(side[1], side[0]);
    assert!(side[0].to_string().contains(SUMMARY_QUERY));
    // The retried summary is the one that replaced the history.
    let last = sent_messages(&model.requests()[1]);
    assert!(last[0].text().starts_with("[Compacted]"), "{last:?}");
    assert!(
        last[0]
            .text()
            .contains("SUMMARY: the model asked to compact")
    );
    assert_eq!(agent.hooks_mut().compactor().summary_failures(), 0);
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events[0].to_string(),
        "429 rate limited — attempt 2/10 in 500ms"
    );
    assert_shown(&recorder, &events);
    let compact = recorder.notices_tagged("compact");
    assert!(
        compact
            .iter()
            .any(|text| text.starts_with("auto compact (the model called compact)")),
        "{compact:?}"
    );
    assert!(
        !compact.iter().any(|text| text.contains("summary failed")),
        "{compact:?}"
    );
    validate(&history).unwrap();
}

#[tokio::test(start_paused = true)]
async fn memory_side_queries_are_retried_like_the_loops_calls() {
    let dir = tempfile::tempdir().unwrap();
    remember_tabs(dir.path());
    let model = Arc::new(
        ScriptedModel::new(vec![Reply::text("done")]).with_side_rules([
            SideRule::new(RECALL_QUERY, overloaded()).times(1),
            SideRule::new(RECALL_QUERY, Reply::text("[\"tabs\"]")),
            SideRule::new(EXTRACTION_QUERY, Reply::error(ScriptedError::RateLimited)).times(1),
            SideRule::new(EXTRACTION_QUERY, Reply::text(one_new_memory())),
        ]),
    );
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();
    let start = Instant::now();

    let (outcome, recorder) = turn(&mut agent, &mut history, "Create hello.py").await;

    // Each side query waited out its failure and was sent again; neither
    // fell back to a weaker answer.
    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(start.elapsed(), ms(500 + 500));
    let side = model.side_requests();
    assert_eq!(side.len(), 4);
    assert_eq!(side[1], side[0]);
    assert!(side[0].to_string().contains(RECALL_QUERY));
    assert_eq!(side[3], side[2]);
    assert!(side[2].to_string().contains(EXTRACTION_QUERY));
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "529 overloaded — attempt 2/10 in 500ms",
            "429 rate limited — attempt 2/10 in 500ms"
        ]
    );
    assert_shown(&recorder, &events);
    assert_eq!(
        recorder.notices_tagged("memory"),
        [
            "recalled tabs",
            "extracted 1 new memory: user-likes-short-answers"
        ]
    );
    // The recalled memory reached the model; the extracted one is on disk.
    let sent = model.requests()[0].to_string();
    assert!(sent.contains("<memories>") && sent.contains("memory-body-42"));
    assert!(
        dir.path()
            .join(".memory/user-likes-short-answers.md")
            .is_file()
    );
    validate(&history).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_subagents_overloaded_call_is_retried_inside_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let description = "Print sub-42 with bash and report what it printed.";
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("task", json!({"description": description})),
        // The subagent's first call is overloaded, then it works.
        overloaded(),
        Reply::tool("bash", json!({"command": "echo sub-42"})),
        Reply::text("It printed sub-42."),
        Reply::text("done"),
    ]));
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "delegate it").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    // The subagent's request (its own prompt, no `task`) went out twice.
    assert_eq!(requests[2], requests[1]);
    assert_eq!(sent_messages(&requests[1])[0].text(), description);
    assert!(!requests[1]["tools"].to_string().contains("\"task\""));
    // The parent got the subagent's answer, not an error.
    assert_eq!(recorder.results.len(), 1);
    assert!(!recorder.results[0].is_error);
    let result = recorder.results[0].text();
    assert!(
        result.starts_with("[subagent finished in 2 rounds]") && result.contains("sub-42"),
        "{result}"
    );
    assert_eq!(delays(&mut agent), [ms(500)]);
    // Recovery reports into the parent's notices directly, tagged as its own.
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events[0].to_string(),
        "529 overloaded — attempt 2/10 in 500ms"
    );
    assert_shown(&recorder, &events);
    let sub = recorder.notices_tagged("sub");
    assert!(
        sub.iter().any(|text| text == "> bash: echo sub-42"),
        "{sub:?}"
    );
    assert!(
        !sub.iter().any(|text| text.starts_with("done: ")),
        "{sub:?}"
    );
    validate(&history).unwrap();
}

// ---- over the wire, in-process -----------------------------------------------------

const RATE_LIMITED: &str =
    r#"{"type":"error","error":{"type":"rate_limit_error","message":"Too many requests"}}"#;
const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
const TOO_LONG: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;

fn rate_limited() -> FakeResponse {
    FakeResponse::json(429, RATE_LIMITED)
}

/// A reply of plain text (a final answer, or a side query's answer).
fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

/// A reply that calls one tool.
fn tool_reply(id: &str, name: &str, input: Value) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "tool_use", "id": id, "name": name, "input": input})],
        "tool_use",
    ))
}

/// The lesson's agent talking to `server` with the real Anthropic client,
/// waiting 1 ms before the first retry.
fn wire_agent(dir: &Path, server: &FakeServer) -> Agent<lesson::LessonHooks> {
    let client = AnthropicClient::new(AnthropicConfig {
        base_url: server.url().to_string(),
        api_key: Some(Secret::new("sk-test-key")),
        auth_token: None,
        timeouts: Timeouts::default(),
    })
    .unwrap();
    let policy = RecoveryPolicy {
        base_delay: ms(1),
        ..policy()
    };
    agent(dir, Arc::new(client), policy)
}

#[tokio::test]
async fn over_the_wire_a_429_on_the_summary_call_is_retried_and_the_turn_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        FakeResponse::json(400, TOO_LONG),
        // The reactive compaction's summary call: refused once, then answered.
        rate_limited(),
        text_reply("SUMMARY: the user said hello"),
        text_reply("hello again"),
        text_reply("[]"),
    ])
    .await
    .unwrap();
    let mut agent = wire_agent(dir.path(), &server);
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "hello").await;

    assert_eq!(outcome.unwrap().final_text, "hello again");
    // The summary is not shown as the answer.
    assert_eq!(recorder.text, "hello again");
    let received = server.received();
    assert_eq!(received.len(), 5);
    let summary = received[1].json();
    assert!(summary.get("tools").is_none());
    assert!(
        summary["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You summarise a coding agent's conversation"),
        "{summary}"
    );
    // The same summary request went out again.
    assert_eq!(received[2].body, received[1].body);
    let retry = received[3].json();
    let first = retry["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("[Reactive compact]"), "{first}");
    assert!(first.contains("SUMMARY: the user said hello"), "{first}");
    assert!(received[4].json().get("tools").is_none());
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "prompt too long — compacting the history (lesson 8), then sending it once more",
            "429 rate limited — attempt 2/10 in 1ms"
        ]
    );
    assert_shown(&recorder, &events);
    assert!(dir.path().join(".transcripts").is_dir());
    validate(&history).unwrap();
}

#[tokio::test]
async fn over_the_wire_a_429_on_memory_recall_and_extraction_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    remember_tabs(dir.path());
    let server = FakeServer::start(vec![
        // Recall: refused once, then answered.
        rate_limited(),
        text_reply("[\"tabs\"]"),
        text_reply("I'll indent with tabs."),
        // Extraction: refused once, then answered.
        rate_limited(),
        text_reply(&one_new_memory()),
    ])
    .await
    .unwrap();
    let mut agent = wire_agent(dir.path(), &server);
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "Create hello.py").await;

    assert_eq!(outcome.unwrap().final_text, "I'll indent with tabs.");
    let received = server.received();
    assert_eq!(received.len(), 5);
    assert_eq!(received[1].body, received[0].body);
    assert!(received[0].body.contains(RECALL_QUERY));
    assert_eq!(received[4].body, received[3].body);
    assert!(received[3].body.contains(EXTRACTION_QUERY));
    // The recalled memory went out with the prompt.
    let main = received[2].json();
    assert!(main.get("tools").is_some());
    let memories = main["messages"][0]["content"][1]["text"].as_str().unwrap();
    assert!(
        memories.starts_with("<memories>") && memories.contains("memory-body-42"),
        "{memories}"
    );
    assert_eq!(
        recorder.notices_tagged("memory"),
        [
            "recalled tabs",
            "extracted 1 new memory: user-likes-short-answers"
        ]
    );
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(events.len(), 2);
    for event in &events {
        assert_eq!(event.to_string(), "429 rate limited — attempt 2/10 in 1ms");
    }
    assert_shown(&recorder, &events);
    assert!(
        dir.path()
            .join(".memory/user-likes-short-answers.md")
            .is_file()
    );
    validate(&history).unwrap();
}

#[tokio::test]
async fn over_the_wire_a_429_on_a_subagent_call_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let description = "Print sub-42 with bash and report what it printed.";
    let server = FakeServer::start(vec![
        tool_reply("toolu_task", "task", json!({"description": description})),
        // The subagent's first call: refused once, then it works.
        rate_limited(),
        tool_reply("toolu_sub", "bash", json!({"command": "echo sub-42"})),
        text_reply("It printed sub-42."),
        text_reply("done"),
        text_reply("[]"),
    ])
    .await
    .unwrap();
    let mut agent = wire_agent(dir.path(), &server);
    let mut history = Vec::new();

    let (outcome, recorder) = turn(&mut agent, &mut history, "delegate it").await;

    assert_eq!(outcome.unwrap().final_text, "done");
    let received = server.received();
    assert_eq!(received.len(), 6);
    // The subagent's request, sent again unchanged.
    assert_eq!(received[2].body, received[1].body);
    let sub = received[1].json();
    assert_eq!(sub["messages"][0]["content"][0]["text"], description);
    assert!(!received[1].body.contains("\"name\":\"task\""));
    // The parent's next request sends its `task` call back, answered by
    // the subagent's summary.
    let parent = received[4].json();
    let call = &parent["messages"][1]["content"][0];
    assert_eq!(call["type"], "tool_use", "{call}");
    assert_eq!(call["id"], "toolu_task");
    assert_eq!(call["name"], "task");
    let result = &parent["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_task");
    assert!(result.get("is_error").is_none(), "{result}");
    let text = result["content"].as_str().unwrap();
    assert!(
        text.starts_with("[subagent finished in 2 rounds]") && text.contains("sub-42"),
        "{text}"
    );
    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["429 rate limited — attempt 2/10 in 1ms"]
    );
    assert_shown(&recorder, &events);
    validate(&history).unwrap();
}

// ---- the binary, over the wire ----------------------------------------------------

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Asserts that each of `lines` appears in `text`, in this order.
fn assert_in_order(text: &str, lines: &[&str]) {
    let mut from = 0;
    for line in lines {
        let at = text[from..]
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} after byte {from} in:\n{text}"));
        from += at + line.len();
    }
}

// ANCHOR: acceptance
#[tokio::test]
async fn over_the_wire_429_three_529s_and_a_cut_stream_are_survived_on_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let overloaded = || FakeResponse::json(529, OVERLOADED);
    // A reply that streams some text, then the connection closes before
    // message_stop.
    let whole = anthropic_stream(
        &[json!({"type": "text", "text": "Half a reply that never ends"})],
        "end_turn",
    );
    let cut = whole[..whole.find("event: content_block_stop").unwrap()].to_string();
    let server = FakeServer::start(vec![
        tool_reply("toolu_1", "bash", json!({"command": "echo recovered-42"})),
        rate_limited().with_header("retry-after", "0"),
        overloaded(),
        overloaded(),
        overloaded(),
        FakeResponse::sse_body(cut),
        text_reply("All done."),
        // Lesson 9's extraction side query, once the turn is over.
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "echo something"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
            ("MODEL_ID", "primary-model"),
            ("FALLBACK_MODEL_ID", "fallback-model"),
            ("RECOVERY_BASE_DELAY_MS", "1"),
        ],
        "",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // The cut reply's text was shown, then the whole reply streamed.
    assert!(
        stdout.contains("Half a reply that never ends") && stdout.contains("All done."),
        "{stdout}"
    );
    let received = server.received();
    assert_eq!(received.len(), 8);
    let models: Vec<String> = received
        .iter()
        .map(|request| request.json()["model"].as_str().unwrap().to_string())
        .collect();
    // The loop's seven requests, then the extraction side query: after the
    // switch, every call of the turn asks the fallback, the side query too.
    assert_eq!(
        models,
        [
            "primary-model",
            "primary-model",
            "primary-model",
            "primary-model",
            "primary-model",
            "fallback-model",
            "fallback-model",
            "fallback-model",
        ]
    );
    assert!(received[7].json().get("tools").is_none());
    assert!(received[7].body.contains(EXTRACTION_QUERY));
    // Every retry sent the same, valid conversation: the tool round whole,
    // nothing of the failed attempts.
    let conversation = received[1].json()["messages"].clone();
    for request in &received[2..7] {
        assert_eq!(request.json()["messages"], conversation);
    }
    let messages: Vec<Message> = serde_json::from_value(conversation).unwrap();
    validate(&messages).unwrap();
    assert_eq!(messages.len(), 3);
    let call = messages[1].tool_uses().next().unwrap();
    assert_eq!((call.id.as_str(), call.name.as_str()), ("toolu_1", "bash"));
    assert_eq!(
        messages[2].tool_result_ids().collect::<Vec<_>>(),
        ["toolu_1"]
    );
    assert!(
        serde_json::to_string(&messages[2])
            .unwrap()
            .contains("recovered-42"),
        "{messages:?}"
    );
    assert_in_order(
        &stderr,
        &[
            "[recovery] 429 rate limited — attempt 2/10 in 0ms (retry-after)\n",
            "[recovery] 529 overloaded — attempt 3/10 in ",
            "[recovery] 529 overloaded — attempt 4/10 in ",
            "[recovery] 3 overloaded replies in a row — switching from primary-model to \
             fallback-model for the rest of this turn\n",
            "[recovery] stream cut short — attempt 6/10 in ",
            "the text shown so far was not kept, and the reply will stream again\n",
        ],
    );
    assert_eq!(stderr.matches("[recovery]").count(), 5, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(!stderr.contains("sk-test-key"));
}
// ANCHOR_END: acceptance

#[tokio::test]
async fn over_the_wire_a_refused_escalation_is_continued_at_the_models_cap() {
    let dir = tempfile::tempdir().unwrap();
    let first_half = FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": "The first half of a long answer, "})],
        "max_tokens",
    ));
    let refusal = json!({
        "type": "error",
        "error": {"type": "invalid_request_error", "message": OVER_THE_CAP}
    });
    let server = FakeServer::start(vec![
        first_half,
        FakeResponse::json(400, refusal.to_string()),
        text_reply("and the second half."),
        // Lesson 9's extraction side query, once the turn is over.
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "write a long answer"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
            ("MODEL_ID", "capped-model"),
            ("RECOVERY_BASE_DELAY_MS", "1"),
        ],
        "",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("The first half of a long answer, ")
            && stdout.contains("and the second half."),
        "{stdout}"
    );
    let received: Vec<Value> = server
        .received()
        .iter()
        .map(|request| request.json())
        .collect();
    assert_eq!(received.len(), 4);
    // The loop's limit, the escalation, then the continuation at the cap.
    assert_eq!(limits(&received[..3]), [8000, 64000, 32000]);
    assert_eq!(received[1]["messages"], received[0]["messages"]);
    let continued = sent_messages(&received[2]);
    assert_eq!(continued.len(), 3);
    assert_eq!(
        continued[1],
        Message::assistant_text("The first half of a long answer, ")
    );
    assert!(continued[2].text().starts_with(CONTINUATION_PROMPT));
    assert!(received[3].get("tools").is_none());
    assert_in_order(
        &stderr,
        &[
            "[recovery] reply cut off at max_tokens 8000 — sending the same request again with \
             max_tokens 64000",
            "[recovery] 400 invalid request — not retried",
            "[recovery] capped-model refused max_tokens 64000: its output cap is 32000, \
             remembered for this session — max_tokens 32000 for the rest of this turn\n",
            "[recovery] reply cut off again — keeping it and asking the model to continue (1/3)\n",
        ],
    );
    assert_eq!(stderr.matches("[recovery]").count(), 4, "{stderr}");
}

#[tokio::test]
async fn the_binary_shows_a_summary_calls_retry_as_a_recovery_line() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        FakeResponse::json(400, TOO_LONG),
        rate_limited(),
        text_reply("SUMMARY: the user said hello"),
        text_reply("hello again"),
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
            ("RECOVERY_BASE_DELAY_MS", "1"),
        ],
        "",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello again"), "{stdout}");
    assert!(!stdout.contains("SUMMARY"), "{stdout}");
    // Recovery announces the compaction, retries the summary call, and
    // compaction reports the summary that came of it.
    assert_in_order(
        &stderr,
        &[
            "[recovery] prompt too long — compacting the history (lesson 8), then sending it \
             once more\n",
            "[recovery] 429 rate limited — attempt 2/10 in 1ms\n",
            "[compact] reactive compact: transcript saved to .transcripts/",
        ],
    );
    assert!(!stderr.contains("summary failed"), "{stderr}");
    let received = server.received();
    assert_eq!(received.len(), 5);
    assert_eq!(received[2].body, received[1].body);
    assert!(dir.path().join(".transcripts").is_dir());
}

#[tokio::test]
async fn after_ten_overloads_the_error_is_one_clear_line_and_a_failure_status() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(
        (0..10)
            .map(|_| FakeResponse::json(529, OVERLOADED))
            .collect(),
    )
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "hello"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
            ("RECOVERY_BASE_DELAY_MS", "0"),
        ],
        "",
    )
    .await;

    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    // Ten attempts, and no extraction side query: the turn did not end well.
    assert_eq!(server.received().len(), 10);
    assert_eq!(
        stderr
            .matches("[recovery] 529 overloaded — attempt ")
            .count(),
        9,
        "{stderr}"
    );
    assert_in_order(
        &stderr,
        &[
            "[recovery] 529 overloaded — giving up after 10 attempts\n",
            "error: the model is overloaded",
        ],
    );
    assert!(!stderr.contains("sk-test-key"));
}

#[tokio::test]
async fn a_bad_key_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![FakeResponse::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )])
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

    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(server.received().len(), 1);
    assert!(
        stderr.contains(
            "[recovery] authentication failed — not retried: the same request would fail again"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("error: authentication failed"), "{stderr}");
    assert!(!stderr.contains("sk-test-key"));
}

#[tokio::test]
async fn a_base_delay_that_is_not_a_number_stops_the_lesson_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::run_binary(
        dir.path(),
        &["-p", "hello"],
        &[("RECOVERY_BASE_DELAY_MS", "lots")],
        "",
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("RECOVERY_BASE_DELAY_MS must be a whole number"),
        "{stderr}"
    );
    // It stopped before the demo model was asked anything.
    assert!(!stderr.contains("[recovery]"), "{stderr}");
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
}
