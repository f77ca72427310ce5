//! Error recovery through the real loop: backoff and its limits, the
//! fallback model, max_tokens escalation and continuation, reactive
//! compaction through the wrapper, and a stream cut mid-reply.
//!
//! Every turn that ends well is followed by lesson 9's memory extraction, a
//! side query without tools that these scripts answer with `[]`. It goes
//! straight to the model, not through `call_model`, so recovery never sees
//! it; the tests tell the turn's requests from it by their `tools` field.
//!
//! Every test that waits runs with tokio's paused time: a `sleep` returns
//! at once and the clock jumps by exactly its length, so the delays are
//! asserted to the millisecond without anyone waiting for them.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use s11_error_recovery::LessonHooks;
use s11_error_recovery::permission::ApproveAll;
use s11_error_recovery::recovery::backoff::{self, DelaySource};
use s11_error_recovery::recovery::truncation::CONTINUATION_PROMPT;
use s11_error_recovery::recovery::{Recovery, RecoveryEvent, RecoveryPolicy, XorShift};
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Event, Observer, Silent, TurnError, TurnOutcome};
use shared::cli::Setup;
use shared::error::ApiError;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{Delta, Message, Request, Response, Role, StopReason};
use shared::tools::Workspace;
use tokio::time::Instant;

const PRIMARY: &str = "primary-model";
const FALLBACK: &str = "fallback-model";

/// One step of a [`Staged`] model's script.
enum Step {
    /// The next scripted reply.
    Reply(Reply),
    /// Fail with this error.
    Fail(ApiError),
    /// Stream this text, then break off.
    CutAfter(&'static str),
}

/// A model that plays replies and failures in order, including failures
/// the scripted model cannot stage (a `retry-after`, a 401, a stream that
/// breaks after some text), and records every request.
struct Staged {
    steps: Vec<Step>,
    next: AtomicUsize,
    replies: ScriptedModel,
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
            replies: ScriptedModel::new(replies),
            requests: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

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
            self.requests
                .lock()
                .unwrap()
                .push(serde_json::to_value(request).unwrap());
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            match self.steps.get(index) {
                Some(Step::Reply(_)) => self.replies.send(request, on_delta).await,
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

/// A policy that does not depend on the environment the tests run in.
fn policy() -> RecoveryPolicy {
    RecoveryPolicy {
        fallback_model: None,
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

fn with_fallback() -> RecoveryPolicy {
    RecoveryPolicy {
        fallback_model: Some(FALLBACK.into()),
        ..exact()
    }
}

fn agent(dir: &Path, model: Arc<dyn Model>, policy: RecoveryPolicy) -> Agent<LessonHooks> {
    let mut agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model,
            model_id: PRIMARY.into(),
        },
        Box::new(ApproveAll),
    )
    .unwrap();
    *agent.hooks.recovery() = Recovery::new(policy).with_seed(42);
    agent
}

async fn turn(
    agent: &mut Agent<LessonHooks>,
    history: &mut Vec<Message>,
    prompt: &str,
) -> Result<TurnOutcome, TurnError> {
    agent
        .run_turn(history, prompt, &mut Silent, &CancellationToken::new())
        .await
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// The waits recovery chose, in order.
fn delays(agent: &mut Agent<LessonHooks>) -> Vec<Duration> {
    agent
        .hooks
        .recovery()
        .events()
        .iter()
        .filter_map(|event| match event {
            RecoveryEvent::Retry { delay, .. } => Some(delay.duration),
            _ => None,
        })
        .collect()
}

/// The turn's requests, without memory's side queries (which have no tools).
fn turn_requests(requests: &[Value]) -> Vec<Value> {
    requests
        .iter()
        .filter(|request| request.get("tools").is_some())
        .cloned()
        .collect()
}

fn is_side_query(request: &Value) -> bool {
    request.get("tools").is_none()
}

fn models(requests: &[Value]) -> Vec<String> {
    requests
        .iter()
        .map(|request| request["model"].as_str().unwrap().to_string())
        .collect()
}

fn write(path: &str) -> Reply {
    Reply::tool("write_file", json!({"path": path, "content": "x"}))
}

fn overloaded() -> Reply {
    Reply::error(ScriptedError::Overloaded)
}

/// The answer to lesson 9's extraction side query: nothing worth keeping.
fn extraction() -> Reply {
    Reply::text("[]")
}

// ---- the backoff formula -------------------------------------------------------

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
        Step::Reply(extraction()),
    ]);
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();

    let start = Instant::now();
    let outcome = turn(&mut agent, &mut history, "go").await.unwrap();

    assert_eq!(outcome.final_text, "done");
    assert_eq!(start.elapsed(), ms(500 + 1000 + 2000));
    assert_eq!(delays(&mut agent), [ms(500), ms(1000), ms(2000)]);
    let requests = model.requests();
    assert_eq!(model.remaining(), 0);
    // The turn's five requests, then the extraction side query.
    assert_eq!(requests.len(), 6);
    assert!(is_side_query(&requests[5]));
    let requests = turn_requests(&requests);
    assert_eq!(requests.len(), 5);
    // Nothing was appended between the attempts: each is the same request.
    for retry in &requests[2..] {
        assert_eq!(retry, &requests[1]);
    }
    validate(&history).unwrap();
    assert_eq!(history.len(), 4);
    let first = &agent.hooks.recovery().events()[0];
    assert_eq!(
        first.to_string(),
        "502 server error — attempt 2/10 in 500ms"
    );
}

#[tokio::test(start_paused = true)]
async fn with_jitter_each_wait_is_within_a_quarter_of_the_formula_and_really_waited() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::error(ScriptedError::RateLimited),
        Reply::error(ScriptedError::Server),
        Reply::error(ScriptedError::RateLimited),
        Reply::text("done"),
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let start = Instant::now();
    turn(&mut agent, &mut Vec::new(), "go").await.unwrap();

    let waits = delays(&mut agent);
    assert_eq!(waits.len(), 3);
    for (wait, base) in waits.iter().zip([500, 1000, 2000].map(ms)) {
        assert!(*wait >= base && *wait <= base * 5 / 4, "{wait:?}");
    }
    assert_eq!(start.elapsed(), waits.iter().sum::<Duration>());
    // The seed fixes the draws: a second agent with the same seed waits
    // exactly as long.
    let again = Arc::new(ScriptedModel::new(vec![
        Reply::error(ScriptedError::RateLimited),
        Reply::error(ScriptedError::Server),
        Reply::error(ScriptedError::RateLimited),
        Reply::text("done"),
        extraction(),
    ]));
    let mut twin = self::agent(dir.path(), again, policy());
    turn(&mut twin, &mut Vec::new(), "go").await.unwrap();
    assert_eq!(delays(&mut twin), waits);
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
        Step::Reply(extraction()),
    ]);
    // Jitter on: a wait the server chose gets none.
    let mut agent = agent(dir.path(), model.clone(), policy());
    let start = Instant::now();

    turn(&mut agent, &mut Vec::new(), "go").await.unwrap();

    assert_eq!(start.elapsed(), Duration::from_secs(3 + 60));
    assert_eq!(
        delays(&mut agent),
        [Duration::from_secs(3), Duration::from_secs(60)]
    );
    assert_eq!(
        agent.hooks.recovery().events()[0].to_string(),
        "429 rate limited — attempt 2/10 in 3.0s (retry-after)"
    );
}

#[tokio::test(start_paused = true)]
async fn after_ten_attempts_the_error_ends_the_turn_with_a_valid_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies = vec![write("a.txt")];
    replies.extend((0..10).map(|_| overloaded()));
    replies.push(Reply::text("the next turn works"));
    replies.push(extraction());
    let model = Arc::new(ScriptedModel::new(replies));
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();
    let start = Instant::now();

    let error = turn(&mut agent, &mut history, "go").await.unwrap_err();

    assert!(
        matches!(error, TurnError::Api(ApiError::Overloaded { .. })),
        "{error:?}"
    );
    // Ten attempts at the second request, nine waits between them; a turn
    // that ends in an error has no extraction side query.
    assert_eq!(model.requests().len(), 11);
    assert_eq!(model.remaining(), 2);
    assert_eq!(
        start.elapsed(),
        ms(500 + 1000 + 2000 + 4000 + 8000 + 16000 + 32000 * 3)
    );
    let events = agent.hooks.recovery().events().to_vec();
    assert_eq!(
        events.last().unwrap().to_string(),
        "529 overloaded — giving up after 10 attempts"
    );
    assert!(events.contains(&RecoveryEvent::NoFallback {
        overloads: 3,
        model: PRIMARY.into()
    }));
    // The tool round is whole; the failed call added nothing.
    validate(&history).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(history[2].role, Role::User);
    // The session goes on.
    let outcome = turn(&mut agent, &mut history, "again").await.unwrap();
    assert_eq!(outcome.final_text, "the next turn works");
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

        let outcome = turn(&mut agent, &mut history, "go").await.unwrap_err();

        assert_eq!(outcome, TurnError::Api(error));
        assert_eq!(model.requests().len(), 1, "{label}");
        assert_eq!(model.remaining(), 1, "{label}");
        assert_eq!(start.elapsed(), Duration::ZERO, "{label}");
        assert_eq!(
            agent.hooks.recovery().events(),
            [RecoveryEvent::NotRetried {
                failure: label.into()
            }]
        );
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
        .run_turn(&mut history, "go", &mut Silent, &cancel)
        .await
        .unwrap_err();

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
        extraction(),
        Reply::text("next turn"),
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), with_fallback());
    let mut history = Vec::new();
    let start = Instant::now();

    let outcome = turn(&mut agent, &mut history, "go").await.unwrap();

    assert_eq!(outcome.final_text, "done on the fallback");
    // Two waits; the switch itself sends at once.
    assert_eq!(start.elapsed(), ms(500 + 1000));
    let requests = model.requests();
    assert_eq!(
        models(&turn_requests(&requests)),
        [PRIMARY, PRIMARY, PRIMARY, FALLBACK, FALLBACK]
    );
    // Memory's extraction does not go through `call_model`: it asks the
    // model the agent was built with, whatever recovery chose for the turn.
    assert_eq!(requests.len(), 6);
    assert!(is_side_query(&requests[5]));
    assert_eq!(requests[5]["model"], PRIMARY);
    assert!(agent.hooks.recovery().on_fallback());
    assert!(
        agent
            .hooks
            .recovery()
            .events()
            .contains(&RecoveryEvent::Fallback {
                overloads: 3,
                from: PRIMARY.into(),
                to: FALLBACK.into()
            })
    );
    validate(&history).unwrap();

    // A new turn tries the primary model again.
    turn(&mut agent, &mut history, "again").await.unwrap();
    assert_eq!(models(&turn_requests(&model.requests()))[5], PRIMARY);
    assert_eq!(model.remaining(), 0);
    assert!(!agent.hooks.recovery().on_fallback());
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
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), with_fallback());
    let mut history = Vec::new();

    turn(&mut agent, &mut history, "go").await.unwrap();

    assert_eq!(model.remaining(), 0);
    assert!(models(&model.requests()).iter().all(|id| id == PRIMARY));
    assert!(!agent.hooks.recovery().on_fallback());
    assert!(
        !agent.hooks.recovery().events().iter().any(|event| matches!(
            event,
            RecoveryEvent::Fallback { .. } | RecoveryEvent::NoFallback { .. }
        ))
    );
    validate(&history).unwrap();
}

// ---- max_tokens ---------------------------------------------------------------------

fn cut(text: &str) -> Reply {
    Reply::text(text).with_stop_reason(StopReason::MaxTokens)
}

fn sent_messages(request: &Value) -> Vec<Message> {
    let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
    validate(&messages).unwrap();
    messages
}

#[tokio::test]
async fn max_tokens_escalates_once_then_continues_three_times_then_stops() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        cut("dropped draft"),
        cut("part 1"),
        cut("part 2"),
        cut("part 3"),
        cut("part 4"),
        extraction(),
        Reply::text("fresh"),
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();

    let outcome = turn(&mut agent, &mut history, "write a lot").await.unwrap();

    // The loop gets the last cut reply, marked as such.
    assert!(outcome.truncated);
    assert_eq!(outcome.final_text, "part 4");
    let requests = model.requests();
    // The turn's five requests, then the extraction side query, which keeps
    // its own limit: recovery does not see it.
    assert_eq!(requests.len(), 6);
    assert!(is_side_query(&requests[5]));
    assert!(requests[5]["max_tokens"].as_u64().unwrap() < 8000);
    let requests = turn_requests(&requests);
    let limits: Vec<u64> = requests
        .iter()
        .map(|request| request["max_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(limits, [8000, 64000, 64000, 64000, 64000]);
    // Escalation sends the same request: the cut draft is not appended.
    assert_eq!(requests[1]["messages"], requests[0]["messages"]);
    assert!(!requests[1].to_string().contains("dropped draft"));
    // Each continuation keeps the partial reply and asks for more.
    let third = sent_messages(&requests[2]);
    assert_eq!(third.len(), 3);
    assert_eq!(third[1], Message::assistant_text("part 1"));
    assert!(third[2].text().starts_with(CONTINUATION_PROMPT));
    validate(&history).unwrap();
    let texts: Vec<String> = history
        .iter()
        .filter(|message| message.role == Role::Assistant)
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["part 1", "part 2", "part 3", "part 4"]);
    assert_eq!(history.len(), 8);
    let events = agent.hooks.recovery().events().to_vec();
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

    // The next turn starts again from the loop's limit.
    turn(&mut agent, &mut history, "short answer")
        .await
        .unwrap();
    assert_eq!(turn_requests(&model.requests())[5]["max_tokens"], 8000);
}

#[tokio::test]
async fn after_escalation_the_rest_of_the_turn_keeps_the_larger_limit() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        cut("draft"),
        write("a.txt"),
        Reply::text("done"),
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.unwrap();
    let limits: Vec<u64> = turn_requests(&model.requests())
        .iter()
        .map(|request| request["max_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(limits, [8000, 64000, 64000]);
    assert_eq!(model.remaining(), 0);
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
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();

    turn(&mut agent, &mut history, "write the file")
        .await
        .unwrap();

    assert_eq!(model.remaining(), 0);
    assert!(!dir.path().join("half.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("whole.txt")).unwrap(),
        "small"
    );
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
        .hooks
        .recovery()
        .events()
        .iter()
        .filter_map(|event| match event {
            RecoveryEvent::Continuation { dropped_calls, .. } => Some(dropped_calls.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, [["write_file"], ["write_file"]]);
}

// ---- reactive compaction through the wrapper -----------------------------------------

#[tokio::test(start_paused = true)]
async fn prompt_too_long_is_compacted_once_even_between_retries() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        write("a.txt"),
        write("b.txt"),
        write("c.txt"),
        overloaded(),
        Reply::error(ScriptedError::PromptTooLong),
        Reply::text("SUMMARY: wrote a"), // the compaction's side call
        overloaded(),
        Reply::text("done"),
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();

    let outcome = turn(&mut agent, &mut history, "write three files")
        .await
        .unwrap();

    assert_eq!(outcome.final_text, "done");
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    let last = sent_messages(&requests[7]);
    assert!(last[0].text().starts_with("[Reactive compact]"));
    assert_eq!(last.len(), 5);
    validate(&history).unwrap();
    // The overload before the compaction and the one after it are the
    // first and second failures of the same request.
    assert_eq!(delays(&mut agent), [ms(500), ms(1000)]);
    assert!(
        agent
            .hooks
            .recovery()
            .events()
            .contains(&RecoveryEvent::Compacting)
    );
}

#[tokio::test]
async fn a_second_prompt_too_long_after_compaction_is_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::error(ScriptedError::PromptTooLong),
        Reply::text("SUMMARY"),
        Reply::error(ScriptedError::PromptTooLong),
        Reply::text("never sent"),
    ]));
    let mut agent = agent(dir.path(), model.clone(), policy());
    let mut history = Vec::new();
    let error = turn(&mut agent, &mut history, "go").await.unwrap_err();
    assert!(matches!(
        error,
        TurnError::Api(ApiError::PromptTooLong { .. })
    ));
    assert_eq!(model.remaining(), 1);
    assert_eq!(
        agent.hooks.recovery().events(),
        [RecoveryEvent::Compacting, RecoveryEvent::StillTooLong]
    );
    validate(&history).unwrap();
}

// ---- a stream cut mid-reply ------------------------------------------------------------

/// Collects the streamed text, as the terminal would show it.
#[derive(Default)]
struct Screen(String);

impl Observer for Screen {
    fn event(&mut self, event: Event<'_>) {
        if let Event::Delta(Delta::Text(text)) = event {
            self.0.push_str(text);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_mid_reply_is_retried_whole_and_only_the_whole_reply_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let model = Staged::new(vec![
        Step::CutAfter("Hello, wor"),
        Step::Fail(ApiError::Timeout(Duration::from_secs(90))),
        Step::Reply(Reply::text("Hello, world.")),
        Step::Reply(extraction()),
    ]);
    let mut agent = agent(dir.path(), model.clone(), exact());
    let mut history = Vec::new();
    let mut screen = Screen::default();

    let outcome = agent
        .run_turn(
            &mut history,
            "greet",
            &mut screen,
            &CancellationToken::new(),
        )
        .await
        .unwrap();

    assert_eq!(outcome.final_text, "Hello, world.");
    // The broken beginning was shown, then the whole reply streamed again.
    assert_eq!(screen.0, "Hello, worHello, world.");
    assert_eq!(
        history,
        [
            Message::user_text("greet"),
            Message::assistant_text("Hello, world.")
        ]
    );
    let requests = model.requests();
    // Three attempts, then the extraction side query.
    assert_eq!(requests.len(), 4);
    assert!(is_side_query(&requests[3]));
    assert_eq!(requests[1], requests[0]);
    assert_eq!(requests[2], requests[0]);
    let events = agent.hooks.recovery().events().to_vec();
    let restreams: Vec<bool> = events
        .iter()
        .map(|event| match event {
            RecoveryEvent::Retry { restreams, .. } => *restreams,
            other => panic!("{other:?}"),
        })
        .collect();
    // Only the attempt that had shown text says it will stream again.
    assert_eq!(restreams, [true, false]);
    assert!(
        events[0]
            .to_string()
            .ends_with("the text shown so far was not kept, and the reply will stream again"),
        "{}",
        events[0]
    );
    assert!(
        events[1]
            .to_string()
            .starts_with("timed out — attempt 3/10")
    );
}

// ---- memory's side queries ----------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn memory_side_queries_bypass_recovery_and_a_failed_one_does_not_end_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        overloaded(),
        Reply::text("done"),
        overloaded(), // the extraction side query
        Reply::text("next turn"),
        extraction(),
    ]));
    let mut agent = agent(dir.path(), model.clone(), with_fallback());
    let mut history = Vec::new();
    let start = Instant::now();

    let outcome = turn(&mut agent, &mut history, "go").await.unwrap();

    // The turn's overload was waited out and sent again; the extraction's
    // was neither retried nor waited for: memory reported it, and the turn
    // ended as it was.
    assert_eq!(outcome.final_text, "done");
    assert_eq!(start.elapsed(), ms(500));
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(is_side_query(&requests[2]));
    assert_eq!(requests[2]["model"], PRIMARY);
    assert_eq!(delays(&mut agent), [ms(500)]);
    assert_eq!(agent.hooks.recovery().events().len(), 1);
    assert_eq!(
        history,
        [Message::user_text("go"), Message::assistant_text("done")]
    );

    // The next turn gets the next reply: no retry of the side query took it.
    let outcome = turn(&mut agent, &mut history, "again").await.unwrap();
    assert_eq!(outcome.final_text, "next turn");
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
}

#[test]
fn the_policy_defaults_are_the_courses() {
    let policy = RecoveryPolicy::default();
    assert_eq!(policy.max_attempts, 10);
    assert_eq!(policy.base_delay, ms(500));
    assert_eq!(policy.max_delay, ms(32_000));
    assert_eq!(policy.max_jitter_percent, 25);
    assert_eq!(policy.overloads_before_fallback, 3);
    assert_eq!(policy.escalated_max_tokens, 64_000);
    assert_eq!(policy.max_continuations, 3);
}
