//! The hook registry (lesson 4), driven through the real loop by a
//! scripted model: each event is triggered at its point of the cycle, and
//! its result does what the chapter says. Then the lesson's own hooks: the
//! `hook` notices they emit, seen in-process by the observer and on
//! standard error when the binary runs against a local fake of the API.

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use lesson::builtin_hooks::HOOK_TAG;
use lesson::permission::ScriptedApprover;
use serde_json::{Value, json};
use shared::agent::{Agent, TurnError};
use shared::history::validate;
use shared::hooks::{PromptCheck, ToolOutput};
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{Message, Role, ToolUse};
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};

use crate::support;

/// An agent in `dir` whose approver says no to every question.
fn agent(dir: &Path, replies: Vec<Reply>) -> (Agent<lesson::LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    let mut options = support::options();
    options.approver = Box::new(ScriptedApprover::new([]));
    (support::agent_with(dir, model.clone(), options), model)
}

fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .tool_results()
        .map(|result| (result.text(), result.is_error))
        .collect()
}

/// A shared list hooks can write to and the test can read.
fn log() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

#[tokio::test]
async fn a_pre_tool_use_result_blocks_the_call_and_is_what_the_model_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::tool("bash", json!({"command": "echo ran > ran.txt"}))
                .and_tool("write_file", json!({"path": "kept.txt", "content": "k"})),
            Reply::text("ok"),
        ],
    );
    let seen_after = log();
    let seen = seen_after.clone();
    agent.hooks_mut().registry().on_pre_tool_use(|call| {
        (call.name == "bash").then(|| "Blocked by policy: no shell today.".to_string())
    });
    agent
        .hooks_mut()
        .registry()
        .on_post_tool_use(move |call, _| seen.lock().unwrap().push(call.name.clone()));

    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert_eq!(
        results[0],
        ("Blocked by policy: no shell today.".to_string(), true)
    );
    assert!(!dir.path().join("ran.txt").exists(), "the tool never ran");
    // The other call was not blocked; only it reached PostToolUse.
    assert!(!results[1].1);
    assert!(dir.path().join("kept.txt").exists());
    assert_eq!(*seen_after.lock().unwrap(), ["write_file"]);
    // And the block is what the model saw in its next request.
    let sent = &model.requests()[1]["messages"][2]["content"][0];
    assert_eq!(sent["content"], "Blocked by policy: no shell today.");
    assert_eq!(sent["is_error"], true);
}

#[tokio::test]
async fn post_tool_use_sees_every_call_and_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = agent(
        dir.path(),
        vec![
            Reply::tool("write_file", json!({"path": "a.txt", "content": "alpha"}))
                .and_tool("read_file", json!({"path": "a.txt"}))
                .and_tool("read_file", json!({"path": "missing.txt"})),
            Reply::text("ok"),
        ],
    );
    let outputs = Arc::new(Mutex::new(Vec::new()));
    let seen = outputs.clone();
    agent
        .hooks_mut()
        .registry()
        .on_post_tool_use(move |call, output| {
            seen.lock()
                .unwrap()
                .push((call.name.clone(), output.text.clone(), output.is_error));
        });

    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();

    let outputs = outputs.lock().unwrap();
    assert_eq!(outputs.len(), 3);
    assert_eq!(outputs[0].0, "write_file");
    assert_eq!(
        outputs[1],
        ("read_file".to_string(), "alpha".to_string(), false)
    );
    assert!(outputs[2].2, "errors are outputs too: {:?}", outputs[2]);
    // What the hook saw is what the model was given.
    let given = results(&history[2]);
    for (seen, given) in outputs.iter().zip(&given) {
        assert_eq!((&seen.1, seen.2), (&given.0, given.1));
    }
}

#[tokio::test]
async fn post_tool_use_feedback_is_added_to_that_call_s_one_result() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::tool("write_file", json!({"path": "a.txt", "content": "alpha"}))
                .and_tool("read_file", json!({"path": "a.txt"})),
            Reply::text("ok"),
        ],
    );
    let mut registry = agent.hooks_mut().registry().clone();
    registry.on_post_tool_use_feedback(|call, output| {
        (call.name == "read_file").then(|| format!("lint: {} is not a word", output.text))
    });
    registry.on_post_tool_use_feedback(|call, _| {
        (call.name == "read_file").then(|| "and a second opinion".to_string())
    });
    // An observer after them sees the output as the tool returned it.
    let observed = log();
    let seen = observed.clone();
    registry.on_post_tool_use(move |_, output| seen.lock().unwrap().push(output.text.clone()));

    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert_eq!(results.len(), 2, "still one result per call: {results:?}");
    assert!(!results[0].0.contains("feedback"), "{results:?}");
    let expected =
        "alpha\n\n[PostToolUse hook feedback]\nlint: alpha is not a word\nand a second opinion";
    assert_eq!(results[1], (expected.to_string(), false));
    assert_eq!(observed.lock().unwrap()[1], "alpha");
    // The model read it in its next request, in that call's tool_result.
    let sent = model.requests()[1]["messages"][2]["content"].clone();
    assert_eq!(sent.as_array().unwrap().len(), 2, "{sent}");
    assert_eq!(sent[1]["type"], "tool_result");
    assert_eq!(
        sent[1]["tool_use_id"],
        model.requests()[1]["messages"][1]["content"][1]["id"]
    );
    assert_eq!(sent[1]["content"], expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_waits_holds_up_no_other_agent_s_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = agent(
        dir.path(),
        vec![
            Reply::tool("bash", json!({"command": "echo first"})),
            Reply::text("ok"),
        ],
    );
    // A second handle on the same registry: what a subagent, a teammate or
    // a background agent of a later lesson triggers its hooks through.
    let mut other = agent.hooks_mut().registry().clone();
    // Like a permission question or a slow command hook: the first call's
    // hook waits until the test lets it go.
    let (entered_tx, mut entered) = tokio::sync::mpsc::unbounded_channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Mutex::new(released);
    let order = log();
    let seen = order.clone();
    other.on_pre_tool_use(move |call| {
        if call.input["command"] == "echo first" {
            entered_tx.send(()).unwrap();
            released.lock().unwrap().recv().unwrap();
        }
        seen.lock().unwrap().push(format!("pre {}", call.id));
        None
    });
    let first = tokio::spawn(async move {
        let mut history = Vec::new();
        let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
        outcome.unwrap();
        history
    });
    entered.recv().await.unwrap();

    // While that hook waits, another agent's call passes every event's
    // hooks, and a hook can be added. Held behind the waiting hook, this
    // would never return (the waiting hook is only released after it).
    let another = tokio::task::spawn_blocking(move || {
        let call = ToolUse {
            id: "second".into(),
            name: "read_file".into(),
            input: json!({"path": "a.txt"}),
        };
        let blocked = other.trigger_pre_tool_use(&call);
        let output = other.trigger_post_tool_use(&call, ToolOutput::ok("a"));
        other.on_stop(|_| None);
        (blocked, output, other.trigger_stop(&[]))
    })
    .await
    .unwrap();

    assert_eq!(another, (None, ToolOutput::ok("a"), None));
    assert!(!first.is_finished(), "the first call is still waiting");
    assert_eq!(*order.lock().unwrap(), ["pre second"]);
    release.send(()).unwrap();
    let history = first.await.unwrap();
    validate(&history).unwrap();
    let first_id = history[1].tool_uses().next().unwrap().id.clone();
    assert_eq!(
        *order.lock().unwrap(),
        ["pre second".to_string(), format!("pre {first_id}")]
    );
}

#[tokio::test]
async fn user_prompt_submit_can_augment_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(dir.path(), vec![Reply::text("ok")]);
    agent
        .hooks_mut()
        .registry()
        .on_user_prompt_submit(|prompt| {
            Some(PromptCheck::Replace(format!(
                "{prompt}\n\n<context>branch: main</context>"
            )))
        });
    // The first hook with a result wins: this one is never consulted.
    agent
        .hooks_mut()
        .registry()
        .on_user_prompt_submit(|_| Some(PromptCheck::Block("too late".into())));

    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "fix the bug").await;
    outcome.unwrap();

    let sent = &model.requests()[0]["messages"][0]["content"][0]["text"];
    assert_eq!(sent, "fix the bug\n\n<context>branch: main</context>");
    assert_eq!(
        history[0].text(),
        "fix the bug\n\n<context>branch: main</context>"
    );
}

#[tokio::test]
async fn user_prompt_submit_can_block_the_prompt_before_the_model_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(dir.path(), vec![Reply::text("ok")]);
    agent
        .hooks_mut()
        .registry()
        .on_user_prompt_submit(|prompt| {
            prompt
                .contains("password")
                .then(|| PromptCheck::Block("prompts must not contain passwords".into()))
        });

    let mut history = Vec::new();
    let (blocked, _) = support::turn(&mut agent, &mut history, "my password is hunter2").await;
    assert_eq!(
        blocked,
        Err(TurnError::PromptBlocked(
            "prompts must not contain passwords".into()
        ))
    );
    assert!(history.is_empty());
    assert!(model.requests().is_empty(), "nothing reached the model");

    // A prompt the hook has no opinion on goes through as typed.
    let (outcome, _) = support::turn(&mut agent, &mut history, "hello").await;
    outcome.unwrap();
    assert_eq!(history[0].text(), "hello");
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_stop_hook_that_always_continues_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::text("done 1"),
            Reply::text("done 2"),
            Reply::text("done 3"),
            Reply::text("done 4"),
            Reply::text("never played"),
        ],
    );
    let stops = log();
    let seen = stops.clone();
    agent.hooks_mut().registry().on_stop(move |history| {
        seen.lock().unwrap().push(history.last().unwrap().text());
        Some("Are you sure? Check again.".into())
    });

    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    let outcome = outcome.unwrap();

    let cap = agent.limits().max_stop_continuations;
    assert_eq!(cap, 3);
    assert_eq!(
        model.requests().len(),
        1 + cap,
        "one call plus three continuations"
    );
    assert_eq!(model.remaining(), 1);
    assert_eq!(outcome.final_text, "done 4");
    // The hook saw each final reply; each continuation is a user message.
    assert_eq!(
        *stops.lock().unwrap(),
        ["done 1", "done 2", "done 3", "done 4"]
    );
    validate(&history).unwrap();
    let continuations = history
        .iter()
        .filter(|m| m.role == Role::User && m.text() == "Are you sure? Check again.")
        .count();
    assert_eq!(continuations, cap);
}

#[tokio::test]
async fn a_stop_hook_can_send_the_model_back_to_work_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::text("I think I'm done."),
            Reply::tool("write_file", json!({"path": "tests.txt", "content": "ok"})),
            Reply::text("Now I'm done."),
        ],
    );
    // Continue until the model has written tests.txt.
    let root = dir.path().to_path_buf();
    agent.hooks_mut().registry().on_stop(move |_| {
        (!root.join("tests.txt").exists()).then(|| "You have not written tests.txt yet.".into())
    });

    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    let outcome = outcome.unwrap();

    assert_eq!(outcome.final_text, "Now I'm done.");
    assert_eq!(model.requests().len(), 3);
    assert!(dir.path().join("tests.txt").exists());
    validate(&history).unwrap();
    // The continuation reached the model as the user's next words.
    let sent: Vec<Message> =
        serde_json::from_value(model.requests()[1]["messages"].clone()).unwrap();
    let last = sent.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert_eq!(last.text(), "You have not written tests.txt yet.");
}

#[tokio::test]
async fn permission_is_a_pre_tool_use_hook_with_the_same_outcome() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim.txt"), "keep").unwrap();
    let (mut agent, _) = agent(
        dir.path(),
        vec![
            Reply::tool("bash", json!({"command": "echo sudo rm -rf / > ran.txt"}))
                .and_tool("bash", json!({"command": "rm victim.txt"})),
            Reply::text("ok"),
        ],
    );
    // A hook registered after the permission hook sees only calls it allowed.
    let reached = log();
    let seen = reached.clone();
    agent.hooks_mut().registry().on_pre_tool_use(move |call| {
        seen.lock().unwrap().push(call.name.clone());
        None
    });

    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert!(results[0].1 && results[0].0.contains("is on the deny list"));
    assert!(results[1].1 && results[1].0.starts_with("Permission denied by the user"));
    assert!(!dir.path().join("ran.txt").exists());
    assert!(dir.path().join("victim.txt").exists());
    assert!(reached.lock().unwrap().is_empty(), "{reached:?}");
    // Neither did the lesson's own log hooks see them; the Stop summary
    // still counts both calls, since both were answered.
    let notices = recorder.notices_tagged(HOOK_TAG);
    assert!(
        !notices
            .iter()
            .any(|n| n.starts_with("PreToolUse") || n.starts_with("PostToolUse")),
        "{notices:?}"
    );
    assert_eq!(notices.last().unwrap(), "Stop: session used 2 tool calls");
}

#[tokio::test]
async fn the_lesson_s_hooks_report_every_event_of_the_cycle_as_notices() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = agent(
        dir.path(),
        vec![
            Reply::tool("write_file", json!({"path": "a.txt", "content": "alpha"}))
                .and_tool("read_file", json!({"path": "a.txt"})),
            Reply::text("done"),
            Reply::tool("read_file", json!({"path": "missing.txt"})),
            Reply::text("done again"),
        ],
    );
    let root = dir.path().canonicalize().unwrap();
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;

    outcome.unwrap();
    // One notice per event, in the order of the cycle; the sizes are those
    // of the results the model was given.
    let wrote = recorder.results[0].text().chars().count();
    assert_eq!(
        recorder.notices_tagged(HOOK_TAG),
        [
            format!("UserPromptSubmit: working in {}", root.display()),
            "PreToolUse: write_file(a.txt)".to_string(),
            format!("PostToolUse: write_file returned output ({wrote} chars)"),
            "PreToolUse: read_file(a.txt)".to_string(),
            "PostToolUse: read_file returned output (5 chars)".to_string(),
            "Stop: session used 2 tool calls".to_string(),
        ]
    );

    // The Stop summary counts the whole session, and a failed call is
    // logged as an error.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "again").await;

    outcome.unwrap();
    let failed = recorder.results[0].text().chars().count();
    assert_eq!(
        recorder.notices_tagged(HOOK_TAG)[1..],
        [
            "PreToolUse: read_file(missing.txt)".to_string(),
            format!("PostToolUse: read_file returned an error ({failed} chars)"),
            "Stop: session used 3 tool calls".to_string(),
        ]
    );
}

#[tokio::test]
async fn only_an_output_over_the_threshold_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let threshold = lesson::builtin_hooks::LARGE_OUTPUT_CHARS;
    // One output a character over the threshold, and one exactly at it.
    let over = threshold + 1;
    let (mut agent, _) = agent(
        dir.path(),
        vec![
            Reply::tool(
                "bash",
                json!({"command": format!("head -c {over} /dev/zero | tr '\\0' x")}),
            )
            .and_tool(
                "bash",
                json!({"command": format!("head -c {threshold} /dev/zero | tr '\\0' y")}),
            ),
            Reply::text("ok"),
        ],
    );
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;

    outcome.unwrap();
    let sizes: Vec<usize> = recorder
        .results
        .iter()
        .map(|result| result.text().chars().count())
        .collect();
    assert!(sizes[0] > threshold && sizes[1] <= threshold, "{sizes:?}");
    let warnings: Vec<String> = recorder
        .notices_tagged(HOOK_TAG)
        .into_iter()
        .filter(|notice| notice.contains("large output"))
        .collect();
    assert_eq!(
        warnings,
        [format!(
            "PostToolUse: ⚠ large output from bash: {} chars (over {threshold})",
            sizes[0]
        )]
    );
    // It only warns: the model still got the whole output.
    assert!(!recorder.results[0].is_error);
}

// The binary: the same notices, printed as `[hook] …` on standard error.

/// A streamed reply that is only `text`.
fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

/// Runs one `-p` prompt against a fake API whose model makes `calls` and
/// then says "finished" (and answers later lessons' side queries with
/// `[]`). No terminal: a question is answered no.
async fn run_with_calls(dir: &Path, calls: &[Value]) -> Output {
    let mut responses = vec![
        FakeResponse::sse_body(anthropic_stream(calls, "tool_use")),
        text_reply("finished"),
    ];
    responses.extend((0..4).map(|_| text_reply("[]")));
    let server = FakeServer::start(responses).await.unwrap();
    support::run_binary(
        dir,
        &["-p", "do it"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key-0042"),
        ],
        "",
    )
    .await
}

/// Asserts that `lines` are lines of `stderr`, in this order.
fn assert_lines_in_order(stderr: &str, lines: &[String]) {
    let all: Vec<&str> = stderr.lines().collect();
    let mut from = 0;
    for line in lines {
        let found = all[from..]
            .iter()
            .position(|candidate| candidate == line)
            .unwrap_or_else(|| panic!("{line:?} after line {from} of:\n{stderr}"));
        from += found + 1;
    }
}

#[tokio::test]
async fn on_stderr_the_four_events_fire_in_the_order_of_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# readme-text-42\n").unwrap();

    let output = run_with_calls(
        dir.path(),
        &[json!({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "README.md"}})],
    )
    .await;

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let root = dir.path().canonicalize().unwrap();
    assert_lines_in_order(
        &stderr,
        &[
            format!("[hook] UserPromptSubmit: working in {}", root.display()),
            "[hook] PreToolUse: read_file(README.md)".to_string(),
            "[hook] PostToolUse: read_file returned output (17 chars)".to_string(),
            "[hook] Stop: session used 1 tool call".to_string(),
        ],
    );
}

#[tokio::test]
async fn on_stderr_a_call_the_permission_hook_blocks_is_never_logged() {
    let dir = tempfile::tempdir().unwrap();

    let output = run_with_calls(
        dir.path(),
        &[
            json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo sudo rm -rf / > ran.txt"}}),
        ],
    )
    .await;

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!dir.path().join("ran.txt").exists());
    // The permission hook blocked it, so the log hook after it never ran,
    // and neither did the tool or its PostToolUse hooks.
    assert!(stderr.contains("[hook] UserPromptSubmit"), "{stderr}");
    assert!(!stderr.contains("[hook] PreToolUse"), "{stderr}");
    assert!(!stderr.contains("[hook] PostToolUse"), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|line| line == "[hook] Stop: session used 1 tool call"),
        "{stderr}"
    );
}
