//! Lesson 20: the workflow runtime. Workflows registered by the tests run
//! against a fake model whose answers depend only on the call (its label,
//! prompt and, for a repair, the error it was told), so two runs of the
//! same workflow are comparable; the fake counts its calls, can hold a
//! call until the test lets it go, and records how many agents were in a
//! call at once. The resume test kills a real process with SIGKILL, at a
//! point the process itself announces, so nothing in it depends on timing.
//! Every other test runs under tokio's paused time: its waits end when the
//! event comes, and the clock moves only when nothing else can run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use shared::agent::Agent;
use shared::error::ApiError;
use shared::history::validate;
use shared::hooks::{Hooks, ToolOutput};
use shared::model::scripted::{Reply, ScriptedModel};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{ContentBlock, Request, Response, Role, StopReason, ToolSpec, Usage};
use shared::testing::Recorder;
use tokio::sync::Semaphore;

use lesson::LessonHooks;
use lesson::workflow::report::RunFinished;
use lesson::workflow::review_changes::verdict_schema;
use lesson::workflow::store::RunStatus;
use lesson::workflow::{
    AgentCall, StartRequest, WorkflowCtx, WorkflowError, WorkflowMeta, WorkflowOptions,
    WorkflowRegistry, stage,
};

use crate::support;

/// Tokens the fake reports for each agent call.
const TOKENS_PER_CALL: u64 = 15;

/// The resumed run's environment: the run id to resume.
const RESUME_ENV: &str = "WORKFLOW_RUNNER_RESUME";
/// The killed run's environment: model calls after this many wait at a gate
/// that never opens, so the journal stops at exactly this many lines and
/// the run cannot end before the test kills it.
const GATE_ENV: &str = "WORKFLOW_RUNNER_GATE_AFTER";
/// What the gated runner prints once its journal holds every call before
/// the gate: the moment to kill it.
const AT_GATE: &str = "workflow-runner: at the gate";

// ---------------------------------------------------------------------------
// The fake model.

/// One agent call as the fake sees it.
#[derive(Debug, Clone)]
struct Ask {
    /// Which model call this is, from 1, in the order they reached the fake.
    number: usize,
    label: String,
    prompt: String,
    /// The repair request's text, on the second attempt.
    repair: Option<String>,
}

type Answer = dyn Fn(&Ask) -> String + Send + Sync;

/// Answers workflow agents by `answer`, and the main loop from a script.
struct Fake {
    main: ScriptedModel,
    answer: Box<Answer>,
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    holds: Mutex<HashMap<String, Arc<Semaphore>>>,
    started: Mutex<Vec<String>>,
    finished: Mutex<Vec<String>>,
    asks: Mutex<Vec<Ask>>,
    gate_after: Option<usize>,
    delay: Duration,
}

impl Fake {
    fn new(main: Vec<Reply>, answer: impl Fn(&Ask) -> String + Send + Sync + 'static) -> Self {
        Self {
            main: ScriptedModel::new(main),
            answer: Box::new(answer),
            calls: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            holds: Mutex::new(HashMap::new()),
            started: Mutex::new(Vec::new()),
            finished: Mutex::new(Vec::new()),
            asks: Mutex::new(Vec::new()),
            gate_after: None,
            delay: Duration::from_millis(10),
        }
    }

    /// A fake whose agents answer with their label.
    fn echo(main: Vec<Reply>) -> Self {
        Self::new(main, |ask| format!("answer of {}", ask.label))
    }

    /// Holds the call labelled `label` (or, for `#n`, the `n`-th call to
    /// reach the fake) until [`Fake::release`].
    fn hold(&self, label: &str) {
        self.holds
            .lock()
            .unwrap()
            .insert(label.to_string(), Arc::new(Semaphore::new(0)));
    }

    fn release(&self, label: &str) {
        self.holds.lock().unwrap()[label].add_permits(1);
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn started(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }

    fn finished(&self) -> Vec<String> {
        self.finished.lock().unwrap().clone()
    }

    async fn agent_call(&self, label: String, request: &Request<'_>) -> Response {
        let number = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.gate_after.is_some_and(|gate| number > gate) {
            std::future::pending::<()>().await;
        }
        self.started.lock().unwrap().push(label.clone());
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let holds: Vec<Arc<Semaphore>> = {
            let holds = self.holds.lock().unwrap();
            [label.clone(), format!("#{number}")]
                .iter()
                .filter_map(|name| holds.get(name).cloned())
                .collect()
        };
        for hold in holds {
            hold.acquire().await.unwrap().forget();
        }
        tokio::time::sleep(self.delay).await;
        let user: Vec<String> = request
            .messages
            .iter()
            .filter(|message| message.role == Role::User)
            .map(|message| message.text())
            .collect();
        let ask = Ask {
            number,
            label: label.clone(),
            prompt: user[0].clone(),
            repair: (user.len() > 1).then(|| user[user.len() - 1].clone()),
        };
        let text = (self.answer)(&ask);
        self.asks.lock().unwrap().push(ask);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.finished.lock().unwrap().push(label);
        Response {
            content: vec![ContentBlock::text(text)],
            stop_reason: Some(StopReason::EndTurn),
            usage: Usage {
                input_tokens: TOKENS_PER_CALL - 5,
                output_tokens: 5,
                ..Usage::default()
            },
        }
    }
}

/// The label a workflow agent's system prompt gives it.
fn label_of(system: &str) -> Option<String> {
    let start = system.find("You are the agent `")? + "You are the agent `".len();
    let end = system[start..].find('`')?;
    Some(system[start..start + end].to_string())
}

impl Model for Fake {
    fn provider(&self) -> &str {
        "fake"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(async move {
            let system = serde_json::to_string(request.system).unwrap();
            match label_of(&system) {
                Some(label) if !request.tools.is_empty() => {
                    Ok(self.agent_call(label, request).await)
                }
                _ => self.main.send(request, on_delta).await,
            }
        })
    }
}

// ---------------------------------------------------------------------------
// The tests' workflows.

fn meta(name: &str) -> WorkflowMeta {
    WorkflowMeta::new(name, format!("test workflow {name}"), ["One", "Two"])
}

/// `n` agents at once (`args.n`, default 3).
async fn fan(ctx: WorkflowCtx, args: Value) -> Result<Value, WorkflowError> {
    let n = args["n"].as_u64().unwrap_or(3);
    let tasks = (0..n)
        .map(|i| {
            let ctx = ctx.clone();
            Box::pin(async move {
                ctx.agent(AgentCall::new(format!("fan:{i}"), format!("item {i}")))
                    .await
            }) as lesson::workflow::BoxFuture<_>
        })
        .collect();
    Ok(json!(ctx.parallel(tasks).await?))
}

/// Items A and B through two stages, no barrier.
async fn pipe(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    let first = {
        let ctx = ctx.clone();
        stage(move |_, item, _| {
            let ctx = ctx.clone();
            async move {
                let item = item.as_str().unwrap().to_string();
                ctx.agent(AgentCall::new(
                    format!("s1:{item}"),
                    format!("first {item}"),
                ))
                .await
            }
        })
    };
    let second = {
        let ctx = ctx.clone();
        stage(move |value, item, _| {
            let ctx = ctx.clone();
            async move {
                let item = item.as_str().unwrap().to_string();
                ctx.agent(AgentCall::new(
                    format!("s2:{item}"),
                    format!("second {item} after {value}"),
                ))
                .await
            }
        })
    };
    Ok(json!(
        ctx.pipeline(vec![json!("A"), json!("B")], vec![first, second])
            .await?
    ))
}

/// The same two stages with a barrier between them.
async fn barrier(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    let stage_of = |prefix: &'static str| {
        let ctx = ctx.clone();
        move |item: &'static str| {
            let ctx = ctx.clone();
            Box::pin(async move {
                ctx.agent(AgentCall::new(
                    format!("{prefix}:{item}"),
                    format!("{prefix} {item}"),
                ))
                .await
            }) as lesson::workflow::BoxFuture<_>
        }
    };
    let first = ctx
        .parallel(vec![stage_of("s1")("A"), stage_of("s1")("B")])
        .await?;
    let second = ctx
        .parallel(vec![stage_of("s2")("A"), stage_of("s2")("B")])
        .await?;
    Ok(json!({"first": first, "second": second}))
}

/// One agent bound to the verdict schema.
async fn judged(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    ctx.agent(AgentCall::new("judge", "Is it real?").schema(verdict_schema()))
        .await
}

/// The same question asked twice at once, for two answers.
async fn twins(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    let ask = || ctx.agent(AgentCall::new("twin", "Pick a number."));
    let (first, second) = (ask(), ask());
    Ok(json!(ctx.parallel(vec![first, second]).await?))
}

async fn inner(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    ctx.agent(AgentCall::new("inner:1", "inside")).await
}

async fn outer(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    let nested = ctx.workflow("inner", json!({})).await?;
    Ok(json!({"nested": nested}))
}

async fn deep(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    ctx.workflow("outer", json!({})).await
}

/// The resume test's workflow: 20 parts through a pipeline, each scanned
/// by one agent and then checked by four in parallel: 100 agents.
async fn fan_out(ctx: WorkflowCtx, _args: Value) -> Result<Value, WorkflowError> {
    ctx.phase("Scan");
    let scan = {
        let ctx = ctx.clone();
        stage(move |_, item, _| {
            let ctx = ctx.clone();
            async move {
                ctx.agent(AgentCall::new(
                    format!("scan:{item}"),
                    format!("Scan part {item}"),
                ))
                .await
            }
        })
    };
    let check = {
        let ctx = ctx.clone();
        stage(move |scanned, item, _| {
            let ctx = ctx.clone();
            async move {
                ctx.phase("Check");
                let checks = (0..4)
                    .map(|j| {
                        let ctx = ctx.clone();
                        let call = AgentCall::new(
                            format!("check:{item}:{j}"),
                            format!("Check {j} of part {item}, given {scanned}"),
                        );
                        Box::pin(async move { ctx.agent(call).await })
                            as lesson::workflow::BoxFuture<_>
                    })
                    .collect();
                let checks = ctx.parallel(checks).await?;
                Ok(json!({"part": item, "scan": scanned, "checks": checks}))
            }
        })
    };
    let parts = (0..20).map(|i| json!(i)).collect();
    let parts = ctx.pipeline(parts, vec![scan, check]).await?;
    Ok(json!({"parts": parts}))
}

fn registry() -> WorkflowRegistry {
    let mut registry = WorkflowRegistry::default();
    registry.register(meta("fan"), fan);
    registry.register(meta("pipe"), pipe);
    registry.register(meta("barrier"), barrier);
    registry.register(meta("judged"), judged);
    registry.register(meta("twins"), twins);
    registry.register(meta("inner"), inner);
    registry.register(meta("outer"), outer);
    registry.register(meta("deep"), deep);
    registry.register(meta("fan-out"), fan_out);
    registry.register(
        WorkflowMeta::new("no-description", " ", Vec::<String>::new()),
        fan,
    );
    registry.register(WorkflowMeta::new("empty-phase", "d", ["One", ""]), fan);
    registry
}

// ---------------------------------------------------------------------------
// Wiring.

fn build(dir: &Path, fake: &Arc<Fake>, concurrency: usize) -> Agent<LessonHooks> {
    let options = lesson::Options {
        workflows: WorkflowOptions {
            registry: registry(),
            concurrency,
        },
        ..support::options()
    };
    support::agent_with(dir, fake.clone(), options)
}

fn start(agent: &Agent<LessonHooks>, name: &str, args: Value, resume: Option<&str>) -> String {
    agent
        .hooks()
        .workflows()
        .start(StartRequest {
            name: name.to_string(),
            args: Some(args),
            resume_from_run_id: resume.map(str::to_string),
        })
        .unwrap()
        .run_id
}

/// The next run to finish. Under paused time the minute is the clock's,
/// which moves only when every task waits: a run that can no longer end
/// fails the test at once instead of hanging it.
async fn next(agent: &Agent<LessonHooks>) -> RunFinished {
    let mut finished = tokio::time::timeout(
        Duration::from_secs(60),
        agent.hooks().workflows().next_finished(),
    )
    .await
    .expect("the run finishes");
    assert_eq!(finished.len(), 1);
    finished.remove(0)
}

fn journal_lines(dir: &Path, run_id: &str) -> Vec<Value> {
    let path = dir.join(format!(".runtime/{run_id}.journal.jsonl"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["key"].is_string())
        .collect()
}

fn snapshot(dir: &Path, run_id: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!(".runtime/{run_id}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Waits until `ready` holds. Under paused time only: the clock moves
/// only when every task waits, so this returns as soon as the event has
/// happened, and fails at once when nothing is left that could make it
/// happen.
async fn until(mut ready: impl FnMut() -> bool) {
    for _ in 0..60_000 {
        if ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("the condition never held");
}

// ---------------------------------------------------------------------------
// Acceptance: SIGKILL at a random point, resume, identical output.

/// Not a test of its own: when [`support::WORKFLOW_RUNNER_ENV`] names a
/// directory, this test binary runs the 100-agent workflow there (or
/// resumes the run [`RESUME_ENV`] names), as a process a test can kill,
/// and writes how many model calls it made and its notification — or, if
/// the run was refused, why. With [`GATE_ENV`] set it never ends: once
/// its journal holds every call before the gate, it prints [`AT_GATE`]
/// and waits to be killed.
#[tokio::test(start_paused = true)]
async fn runner_entry() {
    let Some(dir) = std::env::var_os(support::WORKFLOW_RUNNER_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let mut fake = Fake::new(Vec::new(), |ask| {
        format!("{} saw {}", ask.label, ask.prompt)
    });
    let gate: Option<usize> = std::env::var(GATE_ENV).ok().map(|n| n.parse().unwrap());
    fake.gate_after = gate;
    fake.delay = Duration::from_millis(2);
    let fake = Arc::new(fake);
    let agent = build(&dir, &fake, 4);
    let resume = std::env::var(RESUME_ENV).ok();
    let started = agent.hooks().workflows().start(StartRequest {
        name: "fan-out".to_string(),
        args: Some(json!({})),
        resume_from_run_id: resume,
    });
    if let Err(error) = started {
        std::fs::write(dir.join("runner-refused.txt"), error.to_string()).unwrap();
        return;
    }
    if let Some(gate) = gate {
        // The progress reports count the calls done, each journaled
        // before it counts; the calls after the gate never finish.
        loop {
            let done = agent
                .notices()
                .take_progress()
                .iter()
                .map(|p| count(&p.status, "done"))
                .max();
            if done.is_some_and(|done| done >= gate) {
                break;
            }
            agent.notices().take();
            agent.notices().ready().await;
        }
        println!("{AT_GATE}");
        std::future::pending::<()>().await;
    }
    let finished = next(&agent).await;
    std::fs::write(dir.join("runner-calls.txt"), fake.calls().to_string()).unwrap();
    std::fs::write(dir.join("runner-notification.txt"), finished.notification()).unwrap();
}

/// Runs the runner in `dir` to its end; its model calls and notification.
fn run_runner(dir: &Path, resume: Option<&str>) -> (usize, String) {
    let mut command = support::workflow_runner(dir);
    if let Some(run_id) = resume {
        command.env(RESUME_ENV, run_id);
    }
    let status = command.status().unwrap();
    assert!(status.success());
    let calls = std::fs::read_to_string(dir.join("runner-calls.txt")).unwrap();
    let notification = std::fs::read_to_string(dir.join("runner-notification.txt")).unwrap();
    (calls.trim().parse().unwrap(), notification)
}

/// The one run in `dir`'s `.runtime/`.
fn only_run_id(dir: &Path) -> String {
    let ids: Vec<String> = std::fs::read_dir(dir.join(".runtime"))
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".journal.jsonl").map(str::to_string)
        })
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

/// A number in 1..=99 that differs from run to run (printed, so a failure
/// can be replayed by hand).
fn random_point() -> usize {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    (hasher.finish() % 99) as usize + 1
}

#[tokio::test]
async fn a_run_killed_at_a_random_point_resumes_to_the_same_output_rerunning_only_the_unjournaled()
{
    // The uninterrupted run, for comparison.
    let whole = tempfile::tempdir().unwrap();
    let (calls, notification) = run_runner(whole.path(), None);
    assert_eq!(calls, 100);
    assert!(
        notification.contains("agents: 100 run, 0 cached"),
        "{notification}"
    );
    let whole_id = only_run_id(whole.path());
    let expected = std::fs::read(
        whole
            .path()
            .join(format!(".runtime/{whole_id}.output.json")),
    )
    .unwrap();

    // The same workflow, its model calls after the `point`-th held at a
    // gate that never opens, killed with SIGKILL once it says its journal
    // holds the `point` calls before the gate: the kill lands at exactly
    // that point, whatever the timing.
    let point = random_point();
    println!("killing after {point} journal lines");
    let dir = tempfile::tempdir().unwrap();
    let mut child = support::workflow_runner(dir.path())
        .env(GATE_ENV, point.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let at_gate = std::io::BufRead::lines(stdout)
        .map_while(Result::ok)
        .any(|line| line == AT_GATE);
    assert!(at_gate, "the runner ended before its gate");
    let run_id = only_run_id(dir.path());

    // While it runs there, another process may not resume it: the run's
    // lock file is held by the first.
    let refused = support::workflow_runner(dir.path())
        .env(RESUME_ENV, &run_id)
        .status()
        .unwrap();
    assert!(refused.success());
    let why = std::fs::read_to_string(dir.path().join("runner-refused.txt")).unwrap();
    assert!(
        why.contains(&format!(
            "run {run_id} is already running in another session"
        )),
        "{why}"
    );
    assert_eq!(journal_lines(dir.path(), &run_id).len(), point);

    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let journaled = journal_lines(dir.path(), &run_id).len();
    assert_eq!(journaled, point);
    assert_eq!(snapshot(dir.path(), &run_id)["status"], "running");
    assert!(
        !dir.path()
            .join(format!(".runtime/{run_id}.output.json"))
            .exists()
    );

    // Resumed — the dead process's lock went with it: only what the
    // journal does not hold is asked again, and the output is the
    // uninterrupted run's, byte for byte.
    let (calls, notification) = run_runner(dir.path(), Some(&run_id));
    assert_eq!(calls, 100 - journaled, "{notification}");
    assert!(
        notification.contains(&format!(
            "agents: {} run, {journaled} cached; tokens: {}",
            100 - journaled,
            (100 - journaled) as u64 * TOKENS_PER_CALL
        )),
        "{notification}"
    );
    let output = std::fs::read(dir.path().join(format!(".runtime/{run_id}.output.json"))).unwrap();
    assert!(output == expected, "the resumed output differs");

    // Resumed once more, complete: nothing runs, nothing is spent.
    let (calls, notification) = run_runner(dir.path(), Some(&run_id));
    assert_eq!(calls, 0);
    assert!(
        notification.contains("<status>completed</status>"),
        "{notification}"
    );
    assert!(
        notification.contains("agents: 0 run, 100 cached; tokens: 0;"),
        "{notification}"
    );
    let snapshot = snapshot(dir.path(), &run_id);
    assert_eq!(snapshot["agents_run"], 0);
    assert_eq!(snapshot["tokens"], 0);
    assert_eq!(snapshot["status"], "completed");
    assert!(
        std::fs::read(dir.path().join(format!(".runtime/{run_id}.output.json"))).unwrap()
            == expected
    );
}

// ---------------------------------------------------------------------------
// Acceptance: structured output, one repair, then a failure.

#[tokio::test(start_paused = true)]
async fn an_invalid_answer_is_repaired_once() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new(), |ask| match &ask.repair {
        None => r#"{"isReal": "yes"}"#.to_string(),
        Some(_) => "```json\n{\"isReal\": true, \"reason\": \"seen it\"}\n```".to_string(),
    }));
    let agent = build(dir.path(), &fake, 4);
    let run_id = start(&agent, "judged", json!({}), None);
    let finished = next(&agent).await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    assert_eq!(fake.calls(), 2);
    let asks = fake.asks.lock().unwrap().clone();
    // The first prompt carries the schema; the repair quotes the error.
    assert!(asks[0].prompt.contains("\"isReal\""), "{}", asks[0].prompt);
    let repair = asks[1].repair.as_deref().unwrap();
    assert!(repair.contains("/isReal"), "{repair}");
    assert!(repair.contains("boolean"), "{repair}");
    let output: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(format!(".runtime/{run_id}.output.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(output, json!({"isReal": true, "reason": "seen it"}));
}

#[tokio::test(start_paused = true)]
async fn an_answer_still_invalid_after_the_repair_fails_the_run_naming_label_and_error() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new(), |ask| match &ask.repair {
        None => "It is real.".to_string(),
        Some(_) => r#"{"isReal": true}"#.to_string(),
    }));
    let agent = build(dir.path(), &fake, 4);
    let run_id = start(&agent, "judged", json!({}), None);
    let finished = next(&agent).await;
    assert_eq!(fake.calls(), 2, "one answer, one repair, no more");
    assert_eq!(finished.status, RunStatus::Failed);
    let text = finished.notification();
    assert!(text.contains("<status>failed</status>"), "{text}");
    assert!(
        text.contains("agent `judge` returned invalid output"),
        "{text}"
    );
    assert!(
        text.contains("reason"),
        "the missing property is named: {text}"
    );
    assert!(!text.contains("<output_file>"), "{text}");
    assert_eq!(snapshot(dir.path(), &run_id)["status"], "failed");
    assert!(journal_lines(dir.path(), &run_id).is_empty());
}

// ---------------------------------------------------------------------------
// The tool.

#[tokio::test(start_paused = true)]
async fn bad_calls_are_error_results_that_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let calls = [
        json!({"name": "bad name!"}),
        json!({"name": "no-description"}),
        json!({"name": "empty-phase"}),
        json!({"name": "nope"}),
        json!({"name": "fan", "resume_from_run_id": "../../etc/passwd"}),
        json!({"name": "fan", "resume_from_run_id": "wf-fan-0-0"}),
        json!({"args": {}}),
    ];
    let mut first = Reply::text("");
    for input in &calls {
        first = first.and_tool("Workflow", input.clone());
    }
    let fake = Arc::new(Fake::echo(vec![first, Reply::text("ok")]));
    let mut agent = build(dir.path(), &fake, 4);
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    validate(&history).unwrap();
    let texts: Vec<String> = recorder.results.iter().map(|r| r.text()).collect();
    assert!(
        recorder.results.iter().all(|result| result.is_error),
        "{texts:?}"
    );
    let expected = [
        "is not a safe slug",
        "workflow no-description has an empty description",
        "workflow empty-phase: phase 1 is empty",
        "unknown workflow \"nope\"; registered workflows: barrier, deep, empty-phase, fan, fan-out",
        "is not a run id",
        "no workflow run wf-fan-0-0",
        "missing field `name`",
    ];
    for (text, expected) in texts.iter().zip(expected) {
        assert!(text.contains(expected), "{text:?} lacks {expected:?}");
    }
    assert!(texts[3].contains("review-changes"), "{}", texts[3]);
    assert_eq!(fake.calls(), 0, "no agent ran");
    assert!(!agent.hooks().workflows().has_pending());
}

#[tokio::test(start_paused = true)]
async fn the_tool_returns_at_once_while_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(vec![
        Reply::tool("Workflow", json!({"name": "fan", "args": {"n": 1}})),
        Reply::text("It runs in the background."),
    ]));
    fake.hold("fan:0");
    let mut agent = build(dir.path(), &fake, 4);
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let text = recorder.results[0].text();
    assert!(!recorder.results[0].is_error, "{text}");
    assert!(
        text.contains("started in the background as run wf-fan-"),
        "{text}"
    );
    // The turn is over; the agent is still held, the run still going.
    until(|| fake.started() == ["fan:0"]).await;
    assert!(fake.finished().is_empty());
    assert_eq!(agent.hooks().workflows().running().len(), 1);
    assert!(agent.hooks_mut().has_pending_work(), "-p would wait for it");
    // `/status` lists the run, as it lists background commands.
    let run_id = agent.hooks().workflows().running()[0].0.clone();
    let status = agent.hooks_mut().slash_command("/status").unwrap();
    assert!(
        status.contains(&format!("workflows:   1 running\n  {run_id} fan")),
        "{status}"
    );
    fake.release("fan:0");
    let finished = next(&agent).await;
    assert_eq!(finished.status, RunStatus::Completed);
    assert!(!agent.hooks_mut().has_pending_work());
    let status = agent.hooks_mut().slash_command("/status").unwrap();
    assert!(status.contains("workflows:   0 running"), "{status}");
}

/// A tool that returns once no run is going: the run's notification is
/// then queued, and must come after this round's results.
fn register_wait_tool(agent: &mut Agent<LessonHooks>) {
    let runtime = agent.hooks().workflows().clone();
    agent.hooks_mut().tool_registry().register(
        ToolSpec::new(
            "wait_for_runs",
            "Waits for the runs.",
            json!({"type": "object"}),
        ),
        move |_, _| {
            let runtime = runtime.clone();
            async move {
                while !runtime.running().is_empty() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                ToolOutput::ok("no run is going")
            }
        },
    );
}

#[tokio::test(start_paused = true)]
async fn the_notification_comes_after_the_rounds_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(vec![
        Reply::tool("Workflow", json!({"name": "fan", "args": {"n": 2}})),
        Reply::tool("wait_for_runs", json!({})).and_tool("glob", json!({"pattern": "*"})),
        Reply::text("The run is done."),
    ]));
    let mut agent = build(dir.path(), &fake, 4);
    register_wait_tool(&mut agent);
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    validate(&history).unwrap();
    for request in fake.main.requests() {
        let messages: Vec<shared::protocol::Message> =
            serde_json::from_value(request["messages"].clone()).unwrap();
        validate(&messages).unwrap();
    }
    // The user message after round 2: two results, then the notification.
    let message = &history[4];
    assert_eq!(message.role, Role::User);
    assert!(matches!(message.content[0], ContentBlock::ToolResult(_)));
    assert!(matches!(message.content[1], ContentBlock::ToolResult(_)));
    let ContentBlock::Text { text, .. } = &message.content[2] else {
        panic!("{:?}", message.content)
    };
    assert!(text.starts_with("<task_notification>"), "{text}");
    assert!(text.contains("<status>completed</status>"), "{text}");
    assert!(text.contains("<workflow>fan</workflow>"), "{text}");
    assert!(text.contains(".output.json</output_file>"), "{text}");
    assert!(
        text.contains("agents: 2 run, 0 cached; tokens: 30; tool calls: 0"),
        "{text}"
    );
    assert!(
        text.contains("answer of fan:1"),
        "the result's summary: {text}"
    );
    // Told once: nothing is left for the idle path.
    assert!(agent.hooks().workflows().take_finished().is_empty());
    assert!(!agent.hooks_mut().has_pending_work());
}

#[tokio::test(start_paused = true)]
async fn between_turns_the_notification_is_idle_work_and_progress_reaches_the_observer() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(vec![
        Reply::tool("Workflow", json!({"name": "fan", "args": {"n": 3}})),
        Reply::text("Started."),
    ]));
    fake.hold("fan:2");
    let mut agent = build(dir.path(), &fake, 4);
    let mut history = Vec::new();
    let (outcome, mut seen) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    until(|| fake.finished().len() == 2).await;
    fake.release("fan:2");
    let mut idle = Recorder::default();
    let work = agent.idle_work(&mut idle).await;
    assert!(work.starts_with("<task_notification>"), "{work}");
    assert!(work.contains("<status>completed</status>"), "{work}");
    seen.progress.extend(idle.progress);
    let run_id = agent_run_id(&work);
    assert!(seen.progress.iter().all(|report| report.id == run_id));
    assert!(
        seen.progress
            .iter()
            .all(|report| report.status.starts_with("fan · "))
    );
    assert!(
        seen.progress
            .iter()
            .any(|report| count(&report.status, "running") > 0)
    );
    let last = seen.progress.last().unwrap();
    assert!(last.finished);
    assert_eq!(
        (last.status.as_str(), last.meter.as_str()),
        ("fan · 0 running · 3 done", "45 tokens")
    );
    assert_eq!(3 * TOKENS_PER_CALL, 45);
    assert!(
        seen.progress[..seen.progress.len() - 1]
            .iter()
            .all(|report| !report.finished)
    );
}

/// The number a progress status gives before `what`: 3 in `fan · 3 running`.
fn count(status: &str, what: &str) -> usize {
    let end = status.find(&format!(" {what}")).unwrap();
    status[..end].rsplit(' ').next().unwrap().parse().unwrap()
}

/// The run id in a notification.
fn agent_run_id(notification: &str) -> String {
    let start = notification.find("<task_id>").unwrap() + "<task_id>".len();
    let end = notification.find("</task_id>").unwrap();
    notification[start..end].to_string()
}

// ---------------------------------------------------------------------------
// The primitives.

#[tokio::test(start_paused = true)]
async fn no_more_agents_run_at_once_than_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    let agent = build(dir.path(), &fake, 3);
    start(&agent, "fan", json!({"n": 10}), None);
    let finished = next(&agent).await;
    assert_eq!(finished.status, RunStatus::Completed);
    assert_eq!(fake.calls(), 10);
    // At most the cap, and the cap itself: the ten were not run one by one.
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn a_pipeline_has_no_barrier() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    fake.hold("s1:B");
    let agent = build(dir.path(), &fake, 4);
    start(&agent, "pipe", json!({}), None);
    // Everything that can run has run once the paused clock moves on.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        fake.finished(),
        ["s1:A", "s2:A"],
        "A went on while B was held"
    );
    assert!(fake.started().contains(&"s1:B".to_string()));
    fake.release("s1:B");
    let finished = next(&agent).await;
    assert_eq!(finished.status, RunStatus::Completed);
    assert_eq!(fake.finished(), ["s1:A", "s2:A", "s1:B", "s2:B"]);
    // The results in the items' order, whatever order they finished in.
    assert!(
        finished.summary.find("answer of s2:A").unwrap()
            < finished.summary.find("answer of s2:B").unwrap()
    );
}

#[tokio::test(start_paused = true)]
async fn parallel_is_a_barrier() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    fake.hold("s1:B");
    let agent = build(dir.path(), &fake, 4);
    start(&agent, "barrier", json!({}), None);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.finished(), ["s1:A"]);
    assert_eq!(fake.started(), ["s1:A", "s1:B"], "nothing of stage 2 yet");
    fake.release("s1:B");
    let finished = next(&agent).await;
    assert_eq!(finished.status, RunStatus::Completed);
    assert_eq!(fake.calls(), 4);
}

#[tokio::test(start_paused = true)]
async fn journal_keys_do_not_depend_on_the_order_calls_finish_in() {
    let mut runs = Vec::new();
    for held in ["fan:0", "fan:1"] {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(Fake::echo(Vec::new()));
        fake.hold(held);
        let agent = build(dir.path(), &fake, 4);
        let run_id = start(&agent, "fan", json!({"n": 2}), None);
        tokio::time::sleep(Duration::from_secs(1)).await;
        fake.release(held);
        next(&agent).await;
        let lines = journal_lines(dir.path(), &run_id);
        let order: Vec<String> = lines
            .iter()
            .map(|line| line["label"].as_str().unwrap().to_string())
            .collect();
        let keys: HashMap<String, String> = lines
            .iter()
            .map(|line| {
                (
                    line["label"].as_str().unwrap().to_string(),
                    line["key"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        runs.push((order, keys));
    }
    assert_eq!(runs[0].0, ["fan:1", "fan:0"]);
    assert_eq!(runs[1].0, ["fan:0", "fan:1"]);
    assert_eq!(runs[0].1, runs[1].1, "the same call, the same key");
    assert_ne!(runs[0].1["fan:0"], runs[0].1["fan:1"]);
}

#[tokio::test(start_paused = true)]
async fn a_torn_last_journal_line_is_skipped_with_a_notice_and_its_call_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    let agent = build(dir.path(), &fake, 4);
    let run_id = start(&agent, "fan", json!({"n": 3}), None);
    let first = next(&agent).await;
    let output = std::fs::read(dir.path().join(format!(".runtime/{run_id}.output.json"))).unwrap();
    // A kill in the middle of writing the last line.
    let path = dir.path().join(format!(".runtime/{run_id}.journal.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.trim_end().len() - 10;
    std::fs::write(&path, &text[..cut]).unwrap();
    agent.notices().take();
    start(&agent, "fan", json!({"n": 3}), Some(&run_id));
    let notices = agent.notices().take();
    assert!(
        notices.iter().any(|notice| notice.tag == "workflow"
            && notice.text.contains("line 3: not a journal record")),
        "{notices:?}"
    );
    let again = next(&agent).await;
    assert_eq!(fake.calls(), 4, "three, then the torn one again");
    assert_eq!((again.agents_run, again.agents_cached), (1, 2));
    assert_eq!(again.summary, first.summary);
    assert_eq!(
        std::fs::read(dir.path().join(format!(".runtime/{run_id}.output.json"))).unwrap(),
        output
    );
    assert_eq!(journal_lines(dir.path(), &run_id).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_workflow_nests_one_level_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    let agent = build(dir.path(), &fake, 4);
    start(&agent, "outer", json!({}), None);
    let finished = next(&agent).await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    assert!(
        finished.summary.contains("answer of inner:1"),
        "{}",
        finished.summary
    );
    assert_eq!(finished.agents_run, 1, "the nested agent is the run's own");
    start(&agent, "deep", json!({}), None);
    let finished = next(&agent).await;
    assert_eq!(finished.status, RunStatus::Failed);
    assert!(
        finished
            .summary
            .contains("workflow inner was not started: workflows nest one level only"),
        "{}",
        finished.summary
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_resume_of_a_running_run_or_of_another_workflow_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    fake.hold("fan:0");
    let agent = build(dir.path(), &fake, 4);
    let run_id = start(&agent, "fan", json!({"n": 1}), None);
    let request = |name: &str| StartRequest {
        name: name.to_string(),
        args: None,
        resume_from_run_id: Some(run_id.clone()),
    };
    let running = agent.hooks().workflows().start(request("fan")).unwrap_err();
    assert!(
        running.to_string().contains("is still running"),
        "{running}"
    );
    fake.release("fan:0");
    next(&agent).await;
    let other = agent
        .hooks()
        .workflows()
        .start(request("pipe"))
        .unwrap_err();
    assert!(
        other.to_string().contains("is a run of fan, not of pipe"),
        "{other}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_going_in_another_session_is_not_resumed_there_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    fake.hold("fan:0");
    let first = build(dir.path(), &fake, 4);
    let run_id = start(&first, "fan", json!({"n": 1}), None);
    until(|| fake.started() == ["fan:0"]).await;
    // A second session on the same workspace, as a second process would
    // be: a runtime of its own, which knows nothing of the first's runs.
    let other = Arc::new(Fake::echo(Vec::new()));
    let second = build(dir.path(), &other, 4);
    let refused = second
        .hooks()
        .workflows()
        .start(StartRequest {
            name: "fan".to_string(),
            args: None,
            resume_from_run_id: Some(run_id.clone()),
        })
        .unwrap_err();
    assert!(
        refused.to_string().contains(&format!(
            "run {run_id} is already running in another session"
        )),
        "{refused}"
    );
    assert!(!second.hooks().workflows().has_pending());
    // The refusal disturbed nothing: the first session's run goes on.
    fake.release("fan:0");
    let finished = next(&first).await;
    assert_eq!(finished.status, RunStatus::Completed);
    // Ended, it lets go of its lock: the other session resumes it now.
    start(&second, "fan", json!({"n": 1}), Some(&run_id));
    let resumed = next(&second).await;
    assert_eq!(resumed.status, RunStatus::Completed);
    assert_eq!((resumed.agents_run, resumed.agents_cached), (0, 1));
    assert_eq!(other.calls(), 0);
    assert_eq!(fake.calls(), 1);
}

/// The journal's `(key, value)` lines of a run, in the order written.
fn journal_entries(dir: &Path, run_id: &str) -> Vec<(String, Value)> {
    journal_lines(dir, run_id)
        .into_iter()
        .map(|line| {
            (
                line["key"].as_str().unwrap().to_string(),
                line["value"].clone(),
            )
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn identical_calls_each_get_their_own_answer_back_after_a_kill_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    // Two identical calls, two different answers. The first issued is
    // held: the second issued finishes first, and the run is stopped then.
    let fake = Arc::new(Fake::new(Vec::new(), |ask| {
        format!("{} said {}", ask.label, ask.number)
    }));
    fake.hold("#1");
    let mut agent = build(dir.path(), &fake, 4);
    let run_id = start(&agent, "twins", json!({}), None);
    until(|| fake.started().len() == 2 && fake.finished().len() == 1).await;
    until(|| journal_lines(dir.path(), &run_id).len() == 1).await;
    agent.finish(&mut Recorder::default()).await;
    drop(agent);
    let journaled = journal_entries(dir.path(), &run_id);
    assert_eq!(journaled.len(), 1);
    let (second_key, second_answer) = journaled[0].clone();
    assert_eq!(second_answer, json!("twin said 2"));
    assert!(
        second_key.ends_with("-2"),
        "the second issued is the second occurrence, though it finished first: {second_key}"
    );

    // Resumed: the second call's answer comes from the journal, the
    // first call runs again — it does not take the second's answer.
    let fake = Arc::new(Fake::new(Vec::new(), |ask| {
        format!("{} said {} again", ask.label, ask.number)
    }));
    let agent = build(dir.path(), &fake, 4);
    start(&agent, "twins", json!({}), Some(&run_id));
    let finished = next(&agent).await;
    assert_eq!(finished.status, RunStatus::Completed);
    assert_eq!((finished.agents_run, finished.agents_cached), (1, 1));
    let output = |dir: &Path| -> Value {
        let path = dir.join(format!(".runtime/{run_id}.output.json"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    assert_eq!(
        output(dir.path()),
        json!(["twin said 1 again", "twin said 2"])
    );

    // Resumed once more, complete: both from the journal, each its own.
    let fake = Arc::new(Fake::echo(Vec::new()));
    let agent = build(dir.path(), &fake, 4);
    start(&agent, "twins", json!({}), Some(&run_id));
    let finished = next(&agent).await;
    assert_eq!((finished.agents_run, finished.agents_cached), (0, 2));
    assert_eq!(fake.calls(), 0);
    assert_eq!(
        output(dir.path()),
        json!(["twin said 1 again", "twin said 2"])
    );
}

#[tokio::test(start_paused = true)]
async fn identical_calls_are_keyed_in_the_order_they_are_issued_not_the_order_they_finish() {
    let mut runs = Vec::new();
    for held in ["#1", "#2"] {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(Fake::new(Vec::new(), |ask| {
            format!("{} said {}", ask.label, ask.number)
        }));
        fake.hold(held);
        let agent = build(dir.path(), &fake, 4);
        let run_id = start(&agent, "twins", json!({}), None);
        until(|| fake.started().len() == 2 && fake.finished().len() == 1).await;
        fake.release(held);
        let finished = next(&agent).await;
        assert_eq!(finished.status, RunStatus::Completed);
        runs.push(journal_entries(dir.path(), &run_id));
    }
    // Written in opposite orders...
    assert_eq!(runs[0][0].1, json!("twin said 2"));
    assert_eq!(runs[1][0].1, json!("twin said 1"));
    // ...under the same keys: the first issued has the first key.
    let sorted = |entries: &[(String, Value)]| {
        let mut entries = entries.to_vec();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    };
    assert_eq!(sorted(&runs[0]), sorted(&runs[1]));
    let keys: Vec<&String> = runs[1].iter().map(|(key, _)| key).collect();
    assert_eq!(*keys[1], format!("{}-2", keys[0]));
}

#[tokio::test(start_paused = true)]
async fn a_run_going_at_exit_is_stopped_with_how_to_resume_and_resumes_later() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::echo(Vec::new()));
    fake.hold("fan:1");
    let mut agent = build(dir.path(), &fake, 4);
    let run_id = start(&agent, "fan", json!({"n": 2}), None);
    until(|| fake.finished() == ["fan:0"] && fake.started().len() == 2).await;
    until(|| journal_lines(dir.path(), &run_id).len() == 1).await;
    let mut recorder = Recorder::default();
    agent.finish(&mut recorder).await;
    let said = recorder.notices_tagged("workflow").join("\n");
    assert!(
        said.contains(&format!("\"resume_from_run_id\": \"{run_id}\"")),
        "{said}"
    );
    assert_eq!(snapshot(dir.path(), &run_id)["status"], "stopped");
    drop(agent);

    let fake = Arc::new(Fake::echo(Vec::new()));
    let agent = build(dir.path(), &fake, 4);
    start(&agent, "fan", json!({"n": 2}), Some(&run_id));
    let finished = next(&agent).await;
    assert_eq!(finished.status, RunStatus::Completed);
    assert_eq!((finished.agents_run, finished.agents_cached), (1, 1));
    assert_eq!(fake.started(), ["fan:1"]);
}

#[test]
fn the_settings_file_sets_the_cap_under_the_environment() {
    let file = Path::new("settings.toml");
    let settings = lesson::Settings::parse("[workflow]\nconcurrency = 2\n", file).unwrap();
    let cap = |env: &dyn Fn(&str) -> Option<String>| {
        settings
            .workflow_options(lesson::workflow::WorkflowOptions::default(), env)
            .unwrap()
            .concurrency
    };
    assert_eq!(cap(&|_| None), 2, "the file's value");
    assert_eq!(
        cap(&|name| (name == "WORKFLOW_CONCURRENCY").then(|| "3".to_string())),
        3,
        "the environment wins"
    );
    let zero = lesson::Settings::parse("[workflow]\nconcurrency = 0\n", file)
        .unwrap_err()
        .to_string();
    assert!(zero.contains("workflow.concurrency"), "{zero}");
    let misspelt = lesson::Settings::parse("[workflow]\nconcurency = 2\n", file)
        .unwrap_err()
        .to_string();
    assert!(misspelt.contains("concurency"), "{misspelt}");
}
