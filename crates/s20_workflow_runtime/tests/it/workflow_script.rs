//! Lesson 20: workflow scripts. The model sends JavaScript (or a saved
//! `.workflows/*.js` is started by name) and it runs in the sandbox, its
//! agents against a fake model that answers by label, records how many
//! agents are in a call at once, and can hold a call until the test lets
//! it go. The tests run under tokio's paused time (all but the sample
//! review, whose demo agents run real commands): the limits that are
//! deadlines are on that clock, and the busy loop and the memory bomb are
//! ended by the operation budget and the memory limit, not by waiting.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use shared::agent::Agent;
use shared::error::ApiError;
use shared::hooks::Hooks;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{ContentBlock, Request, Response, Role, StopReason, Usage};
use tokio::sync::{Barrier, Semaphore};

use lesson::LessonHooks;
use lesson::permission::ScriptedApprover;
use lesson::team::scripts::AgentScripts;
use lesson::workflow::report::RunFinished;
use lesson::workflow::runtime::ScriptRequest;
use lesson::workflow::store::RunStatus;
use lesson::workflow::{
    ScriptLimits, StartRequest, WorkflowInputError, WorkflowOptions, WorkflowRegistry,
};

use crate::support;

/// The sample review as a script, as the chapter shows it.
const REVIEW_JS: &str = include_str!("../../src/workflow/review-changes-js.js");
/// Lesson 20's demo model for the review: its scripted agents (as in
/// `demo.json` of lesson 20), which answer the review's calls by label
/// with real tool calls and the findings and verdicts of the chapter.
const DEMO: &str = r##"{
  "replies": [],
  "agents": [
    {
      "when": "`audit:correctness`",
      "replies": [
        {
          "tool_calls": [
            {
              "name": "bash",
              "input": {
                "command": "git diff"
              }
            }
          ]
        },
        {
          "text": "{\"findings\": [{\"title\": \"average() divides by zero on an empty list\", \"severity\": \"high\", \"file\": \"stats.py\", \"detail\": \"The guard for an empty list was removed, so average([]) raises ZeroDivisionError.\"}, {\"title\": \"median() sorts the caller's list in place\", \"severity\": \"low\", \"file\": \"stats.py\", \"detail\": \"Sorting the argument would change the caller's data.\"}]}"
        }
      ]
    },
    {
      "when": "`audit:security`",
      "replies": [
        {
          "tool_calls": [
            {
              "name": "read_file",
              "input": {
                "path": "stats.py"
              }
            }
          ]
        },
        {
          "text": "```json\n{\"findings\": [{\"title\": \"load_settings() runs eval on the file's contents\", \"severity\": \"critical\", \"file\": \"stats.py\", \"detail\": \"eval executes whatever the settings file contains.\"}]}\n```"
        }
      ]
    },
    {
      "when": "`verify:correctness#1`",
      "replies": [
        {
          "text": "{\"isReal\": true, \"reason\": \"average([]) computes 0 / 0; the old guard is gone.\"}"
        }
      ]
    },
    {
      "when": "`verify:correctness#2`",
      "replies": [
        {
          "tool_calls": [
            {
              "name": "read_file",
              "input": {
                "path": "stats.py"
              }
            }
          ]
        },
        {
          "text": "{\"isReal\": false, \"reason\": \"median() calls sorted(), which returns a new list; the argument is untouched.\"}"
        }
      ]
    },
    {
      "when": "`verify:security#1`",
      "replies": [
        {
          "text": "{\"isReal\": true, \"reason\": \"eval(handle.read()) runs arbitrary code from the file.\"}"
        }
      ]
    }
  ]
}"##;

// ---------------------------------------------------------------------------
// The fake model.

/// Answers workflow agents with `answer of <label>: <prompt>`, and the main
/// loop from a script.
struct Fake {
    main: ScriptedModel,
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// When set, every agent call waits here until this many are in.
    together: Option<Barrier>,
    holds: Mutex<HashMap<String, Arc<Semaphore>>>,
    started: Mutex<Vec<String>>,
    finished: Mutex<Vec<String>>,
}

impl Fake {
    fn new(main: Vec<Reply>) -> Self {
        Self {
            main: ScriptedModel::new(main),
            calls: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            together: None,
            holds: Mutex::new(HashMap::new()),
            started: Mutex::new(Vec::new()),
            finished: Mutex::new(Vec::new()),
        }
    }

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

    fn finished(&self) -> Vec<String> {
        self.finished.lock().unwrap().clone()
    }

    async fn agent_call(&self, label: String, request: &Request<'_>) -> Response {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.started.lock().unwrap().push(label.clone());
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        if let Some(together) = &self.together {
            together.wait().await;
        }
        let hold = self.holds.lock().unwrap().get(&label).cloned();
        if let Some(hold) = hold {
            hold.acquire().await.unwrap().forget();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        let prompt = request
            .messages
            .iter()
            .find(|message| message.role == Role::User)
            .map(|message| message.text())
            .unwrap_or_default();
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.finished.lock().unwrap().push(label.clone());
        Response {
            content: vec![ContentBlock::text(format!("answer of {label}: {prompt}"))],
            stop_reason: Some(StopReason::EndTurn),
            usage: Usage::default(),
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

/// Records, in the order they reach it, each workflow agent's first
/// request to `inner` (label and prompt), and passes every request on.
struct Recording {
    inner: AgentScripts,
    seen: Mutex<Vec<(String, String)>>,
}

impl Model for Recording {
    fn provider(&self) -> &str {
        "recording"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        let system = serde_json::to_string(request.system).unwrap();
        if let Some(label) = label_of(&system)
            && request.messages.len() == 1
        {
            let prompt = request.messages[0].text();
            self.seen.lock().unwrap().push((label, prompt));
        }
        self.inner.send(request, on_delta)
    }
}

// ---------------------------------------------------------------------------
// Wiring.

/// Limits small enough for a test to reach, on the paused clock.
fn limits() -> ScriptLimits {
    ScriptLimits {
        memory_bytes: 16 << 20,
        operations: 200,
        deadline: Duration::from_secs(600),
        max_agent_calls: 10,
        call_timeout: Duration::from_secs(30),
        ..ScriptLimits::default()
    }
}

fn build_with(dir: &Path, model: Arc<dyn Model>, options: lesson::Options) -> Agent<LessonHooks> {
    support::agent_with(dir, model, options)
}

fn options_with(concurrency: usize) -> lesson::Options {
    lesson::Options {
        workflows: WorkflowOptions {
            registry: WorkflowRegistry::default().with_script_limits(limits()),
            concurrency,
        },
        ..support::options()
    }
}

fn build(dir: &Path, fake: &Arc<Fake>) -> Agent<LessonHooks> {
    build_with(dir, fake.clone(), options_with(4))
}

fn request(name: &str, resume: Option<&str>) -> StartRequest {
    StartRequest {
        name: name.to_string(),
        args: None,
        resume_from_run_id: resume.map(str::to_string),
    }
}

fn script(source: &str) -> ScriptRequest {
    ScriptRequest {
        description: "a test script".to_string(),
        source: source.to_string(),
    }
}

/// Starts `source` as the run `name`; its run id.
fn start(agent: &Agent<LessonHooks>, name: &str, source: &str) -> String {
    agent
        .hooks()
        .workflows()
        .start_script(request(name, None), script(source))
        .unwrap()
        .run_id
}

/// The next run to finish (a minute of the paused clock at most).
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

/// Runs `source` to its end.
async fn run(agent: &Agent<LessonHooks>, source: &str) -> RunFinished {
    start(agent, "t", source);
    next(agent).await
}

fn output(dir: &Path, run_id: &str) -> Vec<u8> {
    std::fs::read(dir.join(format!(".runtime/{run_id}.output.json"))).unwrap()
}

// ---------------------------------------------------------------------------
// Acceptance: three agents at once; a busy loop stopped, the session on.

#[tokio::test(start_paused = true)]
async fn three_agents_in_parallel_are_in_the_model_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // Each agent call waits until all three are in: run one after another
    // they could never finish.
    let fake = Arc::new(Fake {
        together: Some(Barrier::new(3)),
        ..Fake::new(Vec::new())
    });
    let agent = build(dir.path(), &fake);
    let finished = run(
        &agent,
        "const [a, b, c] = await parallel([\n\
           agent('one', {label: 'a'}),\n\
           () => agent('two', {label: 'b'}),\n\
           agent('three', {label: 'c'}),\n\
         ]);\n\
         return {a, b, c};",
    )
    .await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 3);
    let result: Value = serde_json::from_slice(&output(dir.path(), &finished.run_id)).unwrap();
    assert_eq!(
        result,
        json!({"a": "answer of a: one", "b": "answer of b: two", "c": "answer of c: three"})
    );
}

#[tokio::test(start_paused = true)]
async fn a_busy_loop_is_stopped_with_its_reason_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    let agent = build(dir.path(), &fake);
    let finished = run(&agent, "while (true) {}").await;
    assert_eq!(finished.status, RunStatus::Failed);
    assert!(
        finished.summary.contains("operation budget") && finished.summary.contains("endless loop"),
        "{}",
        finished.summary
    );
    // Catching the interrupt does not save the loop.
    let finished = run(&agent, "try { for (;;) {} } catch (e) {}\nreturn 1").await;
    assert!(
        finished.summary.contains("operation budget"),
        "{}",
        finished.summary
    );
    // The same session runs the next script.
    let finished = run(&agent, "return await agent('still here', {label: 'after'})").await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_memory_bomb_is_stopped_with_its_reason_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    let agent = build(dir.path(), &fake);
    let finished = run(
        &agent,
        "const keep = [];\nwhile (true) keep.push('x'.repeat(1 << 20) + keep.length);",
    )
    .await;
    assert_eq!(finished.status, RunStatus::Failed);
    assert!(
        finished
            .summary
            .contains("ran out of memory (its limit is 16 MiB)"),
        "{}",
        finished.summary
    );
    let finished = run(&agent, "return 'fine'").await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
}

#[tokio::test(start_paused = true)]
async fn deep_recursion_agent_calls_and_slow_agents_each_end_the_run_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    let agent = build(dir.path(), &fake);
    let finished = run(
        &agent,
        "function down(n) { return down(n + 1) + 1 }\nreturn down(0)",
    )
    .await;
    assert!(
        finished.summary.contains("nested too deep"),
        "{}",
        finished.summary
    );
    // The cap counts calls; the eleventh is refused even though it is caught.
    let finished = run(
        &agent,
        "const all = [];\nfor (let i = 0; i < 11; i++) all.push(agent('n' + i, {label: 'n' + i}).catch(() => 0));\nawait parallel(all);\nreturn 'done'",
    )
    .await;
    assert!(
        finished.summary.contains("more than 10 agent() calls"),
        "{}",
        finished.summary
    );
    // A call held past the per-call timeout, on the paused clock.
    fake.hold("slow");
    let finished = run(&agent, "return await agent('wait', {label: 'slow'})").await;
    assert!(
        finished
            .summary
            .contains("agent `slow` took longer than 30 s"),
        "{}",
        finished.summary
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_waiting_past_its_deadline_is_stopped_on_the_paused_clock() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    fake.hold("stuck");
    let mut options = options_with(4);
    options.workflows.registry = WorkflowRegistry::default().with_script_limits(ScriptLimits {
        deadline: Duration::from_secs(10),
        ..limits()
    });
    let agent = build_with(dir.path(), fake.clone(), options);
    let finished = run(&agent, "return await agent('wait', {label: 'stuck'})").await;
    assert_eq!(finished.status, RunStatus::Failed);
    assert!(
        finished
            .summary
            .contains("the run passed its deadline of 10 s"),
        "{}",
        finished.summary
    );
    let finished = run(&agent, "return 'next'").await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
}

#[tokio::test(start_paused = true)]
async fn what_the_sandbox_leaves_out_fails_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    let agent = build(dir.path(), &fake);
    for (source, expected) in [
        (
            "const fs = require('fs')",
            "ReferenceError: require is not defined (workflow scripts have no modules) (line 1, column 12)",
        ),
        (
            "\nreturn Date.now()",
            "ReferenceError: Date is not defined (workflow scripts have no clock",
        ),
        ("return Math.random()", "Math.random is not available"),
        ("await import('fs')", "import is not available"),
        ("return process.env", "process is not defined"),
    ] {
        let finished = run(&agent, source).await;
        assert_eq!(finished.status, RunStatus::Failed, "{source}");
        assert!(
            finished.summary.contains(expected),
            "{source}: {}",
            finished.summary
        );
    }
    // A static import does not even parse: refused before anything starts.
    let refused = agent
        .hooks()
        .workflows()
        .start_script(request("t", None), script("import fs from 'fs'\nreturn 1"))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("import and export are not available"),
        "{refused}"
    );
    assert_eq!(fake.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn script_errors_come_back_with_their_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    let agent = build(dir.path(), &fake);
    let refused = agent
        .hooks()
        .workflows()
        .start_script(
            request("t", None),
            script("const a = await agent('x');\nconst b = ;\nreturn b"),
        )
        .unwrap_err();
    assert!(
        matches!(&refused, WorkflowInputError::Script(_)),
        "{refused:?}"
    );
    let text = refused.to_string();
    assert!(
        text.contains("does not parse") && text.contains("(line 2, column 11)"),
        "{text}"
    );
    let finished = run(
        &agent,
        "const answer = 1;\n\n  throw new Error('no findings: ' + answer)",
    )
    .await;
    assert!(
        finished
            .summary
            .contains("the script failed: Error: no findings: 1 (line 3, column"),
        "{}",
        finished.summary
    );
}

#[tokio::test(start_paused = true)]
async fn a_pipelines_fast_item_reaches_stage_two_before_a_slow_item_leaves_stage_one() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    fake.hold("s1:B");
    let agent = build(dir.path(), &fake);
    start(
        &agent,
        "pipe",
        "return await pipeline(['A', 'B'],\n\
           (value, item) => agent('first ' + item, {label: 's1:' + item}),\n\
           (value, item, index) => agent(index + ' ' + value, {label: 's2:' + item}))",
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        fake.finished(),
        ["s1:A", "s2:A"],
        "A went on while B was held"
    );
    fake.release("s1:B");
    let finished = next(&agent).await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    assert_eq!(fake.finished(), ["s1:A", "s2:A", "s1:B", "s2:B"]);
    let result: Value = serde_json::from_slice(&output(dir.path(), &finished.run_id)).unwrap();
    assert_eq!(
        result,
        json!([
            "answer of s2:A: 0 answer of s1:A: first A",
            "answer of s2:B: 1 answer of s1:B: first B"
        ])
    );
}

// ---------------------------------------------------------------------------
// The journal: a stopped run resumed runs only what is not journaled.

const THREE_STEPS: &str = "const a = await agent('one', {label: 'a'});\n\
     const b = await agent('two', {label: 'b', key: 'v1'});\n\
     const c = await agent('three', {label: 'c'});\n\
     return [a, b, c];";

#[tokio::test(start_paused = true)]
async fn a_stopped_script_run_resumed_reruns_only_the_calls_not_journaled() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    fake.hold("c");
    let agent = build(dir.path(), &fake);
    let run_id = start(&agent, "steps", THREE_STEPS);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.finished(), ["a", "b"]);
    // The session ends with the run in the middle of its third call.
    assert_eq!(
        agent.hooks().workflows().stop_all().await,
        vec![run_id.clone()]
    );
    drop(agent);

    // A new session resumes it by id, without sending the script again.
    let fresh = Arc::new(Fake::new(Vec::new()));
    let agent = build(dir.path(), &fresh);
    let started = agent
        .hooks()
        .workflows()
        .start(request("steps", Some(&run_id)))
        .unwrap();
    assert_eq!(started.journaled, 2);
    let finished = next(&agent).await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    assert_eq!(fresh.finished(), ["c"], "only the call not journaled ran");
    assert_eq!((finished.agents_run, finished.agents_cached), (1, 2));

    // Resumed with an edited script: the call whose key changed runs
    // again, the unchanged ones come from the journal.
    let edited = THREE_STEPS.replace("key: 'v1'", "key: 'v2'");
    let started = agent
        .hooks()
        .workflows()
        .start_script(request("steps", Some(&run_id)), script(&edited))
        .unwrap();
    assert_eq!(started.journaled, 3);
    let finished = next(&agent).await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    assert_eq!(fresh.finished(), ["c", "b"]);
}

// ---------------------------------------------------------------------------
// Permission: a script the model sends asks; a settings rule decides.

fn workflow_call(name: &str) -> Reply {
    Reply::tool(
        "Workflow",
        json!({"name": name, "description": "one agent", "script": "return await agent('hi', {label: 'x'})"}),
    )
}

#[tokio::test(start_paused = true)]
async fn a_script_from_the_model_asks_and_a_settings_rule_can_allow_or_deny_it() {
    // Asked, and refused by the user: nothing starts.
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(vec![workflow_call("mine"), Reply::text("ok")]));
    let approver = ScriptedApprover::new([false]);
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
        ..options_with(4)
    };
    let mut agent = build_with(dir.path(), fake.clone(), options);
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].reason, "Running a workflow script the model wrote");
    assert!(!agent.hooks().workflows().has_pending());

    // `Workflow(script)` in allow: it runs without a question.
    for (list, runs) in [("allow", true), ("deny", false)] {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(Fake::new(vec![workflow_call("mine"), Reply::text("ok")]));
        let approver = ScriptedApprover::new([]);
        let settings = lesson::Settings::parse(
            &format!("[permissions]\n{list} = [\"Workflow(script)\"]\n"),
            Path::new("settings.toml"),
        )
        .unwrap();
        let options = lesson::Options {
            approver: Box::new(approver.clone()),
            settings,
            ..options_with(4)
        };
        let mut agent = build_with(dir.path(), fake.clone(), options);
        let mut history = Vec::new();
        let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
        outcome.unwrap();
        assert!(approver.asked().is_empty(), "{list}: nobody is asked");
        if runs {
            let finished = next(&agent).await;
            assert_eq!(
                finished.status,
                RunStatus::Completed,
                "{}",
                finished.summary
            );
        } else {
            assert!(
                !agent.hooks().workflows().has_pending(),
                "denied: nothing runs"
            );
        }
    }

    // Writing a saved script asks too.
    let dir = tempfile::tempdir().unwrap();
    let write = Reply::tool(
        "write_file",
        json!({"path": ".workflows/mine.js", "content": "// mine\nreturn 1"}),
    );
    let fake = Arc::new(Fake::new(vec![write, Reply::text("ok")]));
    let approver = ScriptedApprover::new([false]);
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
        ..options_with(4)
    };
    let mut agent = build_with(dir.path(), fake.clone(), options);
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    assert_eq!(
        approver.asked()[0].reason,
        "Writing a saved workflow script (.workflows/ runs without asking)"
    );
    assert!(!dir.path().join(".workflows/mine.js").exists());
}

// ---------------------------------------------------------------------------
// Acceptance: the sample review as a saved script.

/// A workspace with the review saved as `.workflows/review-changes-js.js`.
fn review_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".workflows")).unwrap();
    std::fs::write(
        dir.path().join(".workflows/review-changes-js.js"),
        REVIEW_JS,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("stats.py"),
        "def average(values):\n    return sum(values) / len(values)\n",
    )
    .unwrap();
    dir
}

/// Runs `name` in `dir` under the lesson's demo model, one agent at a
/// time (so the order of the calls is the order they were issued in):
/// each agent's label and prompt in that order, and the output file.
async fn review(dir: &Path, name: &str) -> (Vec<(String, String)>, Vec<u8>, String) {
    let model = Arc::new(Recording {
        inner: AgentScripts::demo(DEMO).unwrap(),
        seen: Mutex::new(Vec::new()),
    });
    let agent = build_with(dir, model.clone(), options_with(1));
    let run_id = agent
        .hooks()
        .workflows()
        .start(StartRequest {
            name: name.to_string(),
            args: Some(json!({"dimensions": ["correctness", "security"]})),
            resume_from_run_id: None,
        })
        .unwrap()
        .run_id;
    let finished = next(&agent).await;
    assert_eq!(
        finished.status,
        RunStatus::Completed,
        "{}",
        finished.summary
    );
    let seen = model.seen.lock().unwrap().clone();
    (seen, output(dir, &run_id), finished.summary)
}

// Real time: the demo's agents run real commands, and a paused clock would
// jump past the run's deadline while one runs.
#[tokio::test]
async fn the_review_as_a_script_makes_the_same_calls_and_the_same_output_as_the_rust_one() {
    let rust_dir = review_workspace();
    let (rust_calls, rust_output, _) = review(rust_dir.path(), "review-changes").await;
    let script_dir = review_workspace();
    let (script_calls, script_output, summary) =
        review(script_dir.path(), "review-changes-js").await;
    let labels: Vec<&str> = rust_calls.iter().map(|(label, _)| label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "audit:correctness",
            "audit:security",
            "verify:correctness#1",
            "verify:correctness#2",
            "verify:security#1"
        ]
    );
    assert_eq!(
        script_calls, rust_calls,
        "same calls, same prompts, same order"
    );
    assert_eq!(
        String::from_utf8(script_output).unwrap(),
        String::from_utf8(rust_output).unwrap()
    );
    assert!(summary.contains("\"findings\": 3"), "{summary}");
}

#[tokio::test(start_paused = true)]
async fn saved_scripts_are_listed_in_the_tool_and_in_status_for_the_whole_session() {
    let dir = review_workspace();
    std::fs::write(dir.path().join(".workflows/broken.js"), "return (").unwrap();
    let fake = Arc::new(Fake::new(Vec::new()));
    let mut agent = build(dir.path(), &fake);
    // A script saved after start-up is not seen until the next session.
    std::fs::write(dir.path().join(".workflows/later.js"), "// later\nreturn 1").unwrap();
    let tools = agent.hooks_mut().tools();
    let workflow = tools.iter().find(|tool| tool.name == "Workflow").unwrap();
    assert!(
        workflow
            .description
            .contains("\n- review-changes-js (saved script): Review the workspace's"),
        "{}",
        workflow.description
    );
    assert!(workflow.description.contains("(phases: Review, Verify)"));
    assert!(!workflow.description.contains("\n- broken"));
    assert!(!workflow.description.contains("\n- later"));
    let status = agent.hooks().status_view();
    assert_eq!(status.saved_scripts, ["review-changes-js"]);
    assert!(
        lesson::slash::render(&status).contains("scripts:     review-changes-js"),
        "{}",
        lesson::slash::render(&status)
    );
}
