//! The lesson binary, run as a user runs it: with no key (the demo model)
//! and against a local fake of the Anthropic API.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::json;
use shared::history::validate;
use shared::protocol::Message;
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};
use tokio::io::AsyncWriteExt;

const BINARY: &str = env!("CARGO_BIN_EXE_s11_error_recovery");

/// Runs the binary in `dir` with a clean environment plus `vars`, and no
/// standard input (so no terminal to ask).
async fn run(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    run_with_input(dir, args, vars, "").await
}

/// Like [`run`], with `input` piped to standard input.
async fn run_with_input(dir: &Path, args: &[&str], vars: &[(&str, &str)], input: &str) -> Output {
    let mut command = tokio::process::Command::new(BINARY);
    command
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in vars {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("the lesson binary starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child
        .wait_with_output()
        .await
        .expect("the lesson binary runs")
}

/// A fake Anthropic API whose model calls `calls` (tool_use blocks) in its
/// first reply and says "finished" in its second; the third request is the
/// memory extraction side query, which finds nothing new.
async fn fake_model(calls: &[serde_json::Value]) -> FakeServer {
    FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(calls, "tool_use")),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "finished"})],
            "end_turn",
        )),
        text_reply("[]"),
    ])
    .await
    .unwrap()
}

/// A reply of plain text (a final answer, or a side query's answer).
fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

fn bash_call(id: &str, command: &str) -> serde_json::Value {
    json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": command}})
}

/// Runs one `-p` prompt against `server` with `extra` flags.
async fn run_against(dir: &Path, server: &FakeServer, extra: &[&str]) -> Output {
    let mut args = vec!["-p", "do it"];
    args.extend_from_slice(extra);
    run(
        dir,
        &args,
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await
}

/// The tool results the second request sent back: (tool_use_id, text, is_error).
fn sent_results(server: &FakeServer) -> Vec<(String, String, bool)> {
    let received = server.received();
    // The turn's two requests, then the extraction side query.
    assert_eq!(received.len(), 3);
    let second = received[1].json();
    second["messages"][2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| {
            assert_eq!(block["type"], "tool_result");
            (
                block["tool_use_id"].as_str().unwrap().to_string(),
                block["content"].as_str().unwrap().to_string(),
                block["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

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

/// The sections of a prompt built with no memory in the store.
const ASSEMBLED: &str = "[assembled] sections: identity, workspace, tools, planning, skills\n";
/// The same, once the store holds a memory.
const ASSEMBLED_WITH_MEMORY: &str =
    "[assembled] sections: identity, workspace, tools, planning, skills, memory\n";
const CACHE_HIT: &str = "[cache hit] system prompt unchanged\n";

#[tokio::test]
async fn demo_model_walks_through_every_recovery_path_with_real_tools_without_a_key() {
    let dir = tempfile::tempdir().unwrap();

    let output = run(
        dir.path(),
        &["-p", "write a guide to error recovery into GUIDE.md"],
        // A 1 ms base keeps the demo's backoff path without its seconds.
        &[("RECOVERY_BASE_DELAY_MS", "1")],
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // Each path announces itself, in the order the demo reaches it. The
    // system prompt is assembled once per round, not once per attempt.
    assert_in_order(
        &stderr,
        &[
            ASSEMBLED,
            "[recovery] 429 rate limited — attempt 2/10 in ",
            "[recovery] 529 overloaded — attempt 3/10 in ",
            "[recovery] 3 overloaded replies in a row — no FALLBACK_MODEL_ID is set",
            "[recovery] 529 overloaded — attempt 5/10 in ",
            CACHE_HIT,
            "[recovery] stream cut short — attempt 2/10 in ",
            "[recovery] reply cut off at max_tokens 8000 — sending the same request again with max_tokens 64000",
            "[recovery] reply cut off again — keeping it and asking the model to continue (1/3); dropped the unfinished tool calls: write_file",
            CACHE_HIT,
            "[recovery] prompt too long — compacting the history",
            "[compact] reactive compact: transcript saved to .transcripts/",
        ],
    );
    assert_eq!(stderr.matches("[assembled]").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("[cache hit]").count(), 2, "{stderr}");
    // The script answers lesson 9's extraction side query too: no warning.
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(stdout.contains("GUIDE.md is written"), "{stdout}");
    assert!(!stdout.contains("[]"), "{stdout}");
    // The real file: the whole guide, not the dropped unfinished call.
    let guide = std::fs::read_to_string(dir.path().join("GUIDE.md")).unwrap();
    assert!(
        guide.contains("## 3. Conversations that no longer fit"),
        "{guide}"
    );
    assert!(!guide.contains("unfinished"));
    assert_eq!(
        std::fs::read_dir(dir.path().join(".transcripts"))
            .unwrap()
            .count(),
        1
    );

    // With a fallback model set, the third overload switches instead; and
    // with --workdir, everything happens in that (empty) directory.
    let dir = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "--workdir",
            workdir.path().to_str().unwrap(),
            "-p",
            "write a guide to error recovery into GUIDE.md",
        ],
        &[
            ("RECOVERY_BASE_DELAY_MS", "1"),
            ("FALLBACK_MODEL_ID", "claude-haiku-4-5"),
        ],
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("to claude-haiku-4-5 for the rest of this turn"),
        "{stderr}"
    );
    assert!(!stderr.contains("attempt 5/10"), "{stderr}");
    assert!(workdir.path().join("GUIDE.md").is_file());
    assert!(!dir.path().join("GUIDE.md").exists());
}

#[tokio::test]
async fn a_setting_that_is_not_a_number_stops_the_lesson_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    for (variable, message) in [
        (
            "COMPACT_THRESHOLD_TOKENS",
            "COMPACT_THRESHOLD_TOKENS must be a whole number",
        ),
        (
            "RECOVERY_BASE_DELAY_MS",
            "RECOVERY_BASE_DELAY_MS must be a whole number",
        ),
    ] {
        let output = run(dir.path(), &["-p", "hello"], &[(variable, "lots")]).await;
        assert!(!output.status.success());
        assert!(
            text(&output.stderr).contains(message),
            "{}",
            text(&output.stderr)
        );
    }
}

// ANCHOR: acceptance
#[tokio::test]
async fn over_the_wire_429_three_529s_and_a_cut_stream_are_survived_on_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let overloaded = || {
        FakeResponse::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
    };
    // A reply that streams some text, then the connection closes before
    // message_stop.
    let whole = anthropic_stream(
        &[json!({"type": "text", "text": "Half a reply that never ends"})],
        "end_turn",
    );
    let cut = whole[..whole.find("event: content_block_stop").unwrap()].to_string();
    let server = FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(
            &[bash_call("toolu_1", "echo recovered-42")],
            "tool_use",
        )),
        FakeResponse::json(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Too many requests"}}"#,
        )
        .with_header("retry-after", "0"),
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

    let output = run(
        dir.path(),
        &["-p", "echo something"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
            ("MODEL_ID", "primary-model"),
            ("FALLBACK_MODEL_ID", "fallback-model"),
            ("RECOVERY_BASE_DELAY_MS", "1"),
        ],
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
    // The turn's requests are the ones that offer tools.
    let (turn, side): (Vec<_>, Vec<_>) = received
        .iter()
        .map(|request| request.json())
        .partition(|request| request.get("tools").is_some());
    let models: Vec<&str> = turn
        .iter()
        .map(|request| request["model"].as_str().unwrap())
        .collect();
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
        ]
    );
    // The extraction side query came last. It does not go through
    // call_model, so it asks the model the agent was built with, not the
    // turn's fallback, and a failure there would not be retried.
    assert_eq!(side.len(), 1);
    assert_eq!(received[7].json(), side[0]);
    assert_eq!(side[0]["model"], "primary-model");
    // Every retry sent the same, valid conversation: the tool round whole,
    // nothing of the failed attempts.
    let conversation = turn[1]["messages"].clone();
    for request in &turn[2..] {
        assert_eq!(request["messages"], conversation);
    }
    let messages: Vec<Message> = serde_json::from_value(conversation).unwrap();
    validate(&messages).unwrap();
    assert_eq!(messages.len(), 3);
    assert!(
        serde_json::to_string(&messages[2])
            .unwrap()
            .contains("recovered-42"),
        "{messages:?}"
    );
    for notice in [
        "[recovery] 429 rate limited — attempt 2/10 in 0ms (retry-after)",
        "[recovery] 529 overloaded — attempt 3/10 in ",
        "[recovery] 529 overloaded — attempt 4/10 in ",
        "[recovery] 3 overloaded replies in a row — switching from primary-model to fallback-model for the rest of this turn",
        "[recovery] stream cut short — attempt 6/10 in ",
        "the text shown so far was not kept, and the reply will stream again",
    ] {
        assert!(stderr.contains(notice), "{notice:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(!stderr.contains("sk-test-key"));
}
// ANCHOR_END: acceptance

/// The bytes of the `system` field in a request body, as sent.
fn raw_system(body: &str) -> &str {
    let start = body.find("\"system\":").unwrap();
    let end = body.find("\"messages\":").unwrap();
    &body[start..end]
}

#[tokio::test]
async fn over_the_wire_the_prefix_is_marked_for_caching_and_sent_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_model(&[bash_call("toolu_1", "echo hi")]).await;

    let output = run_against(dir.path(), &server, &[]).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_in_order(&stderr, &[ASSEMBLED, CACHE_HIT]);
    let received = server.received();
    // The turn's two requests, then the extraction side query.
    assert_eq!(received.len(), 3);
    assert_eq!(raw_system(&received[0].body), raw_system(&received[1].body));
    let first = received[0].json();
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(first["system"][0]["cache_control"], ephemeral);
    assert_eq!(first["system"].as_array().unwrap().len(), 1);
    let tools = first["tools"].as_array().unwrap();
    let (last, others) = tools.split_last().unwrap();
    assert_eq!(last["cache_control"], ephemeral);
    assert!(
        others
            .iter()
            .all(|tool| tool.get("cache_control").is_none())
    );
    assert_eq!(received[0].body.matches("\"cache_control\"").count(), 2);
    // The tools section names exactly the tools the request offers.
    let mut names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    let system = first["system"][0]["text"].as_str().unwrap();
    assert!(
        system.contains(&format!("Available tools: {}.", names.join(", "))),
        "{system}"
    );
    assert!(names.contains(&"task"), "{names:?}");
}

#[tokio::test]
async fn with_v_the_cache_figures_the_api_reports_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    // A reply whose usage says most of the prompt came from the cache.
    let body = anthropic_stream(&[json!({"type": "text", "text": "hi"})], "end_turn").replace(
        r#""usage":{"input_tokens":10,"output_tokens":1}"#,
        r#""usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":1834,"input_tokens":12,"output_tokens":1}"#,
    );
    assert!(
        body.contains("1834"),
        "the fake stream changed shape: {body}"
    );
    let server = FakeServer::start(vec![FakeResponse::sse_body(body), text_reply("[]")])
        .await
        .unwrap();

    let output = run_against(dir.path(), &server, &["-v"]).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("prompt cache: read 1834 tokens, wrote 0, 12 input tokens uncached"),
        "{stderr}"
    );
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_memory_present_at_start_is_in_the_first_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".memory")).unwrap();
    // Written by hand, without an index: the agent indexes it at start-up.
    std::fs::write(
        dir.path().join(".memory/tabs.md"),
        "---\nname: tabs\ndescription: the user prefers tabs\ntype: user\n---\nTabs.\n",
    )
    .unwrap();
    // The store is not empty, so the turn starts with a recall side query.
    let server = FakeServer::start(vec![
        text_reply("[]"),
        FakeResponse::sse_body(anthropic_stream(
            &[bash_call("toolu_1", "echo hi")],
            "tool_use",
        )),
        text_reply("finished"),
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = run_against(dir.path(), &server, &[]).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_in_order(&stderr, &[ASSEMBLED_WITH_MEMORY, CACHE_HIT]);
    assert_eq!(stderr.matches("[assembled]").count(), 1, "{stderr}");
    let received = server.received();
    assert_eq!(received.len(), 4);
    let first = received[1].json();
    let system = first["system"][0]["text"].as_str().unwrap();
    assert!(
        system.contains("\n\n# Memory\n")
            && system.contains("- tabs — the user prefers tabs — tabs.md"),
        "{system}"
    );
}

#[tokio::test]
async fn over_the_wire_prompt_too_long_is_summarised_and_retried_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        FakeResponse::json(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        ),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "SUMMARY: the user said hello"})],
            "end_turn",
        )),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "hello again"})],
            "end_turn",
        )),
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = run(
        dir.path(),
        &["-p", "hello"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello again"), "{stdout}");
    assert!(
        !stdout.contains("SUMMARY"),
        "the summary is not streamed: {stdout}"
    );
    // Lesson 11's wrapper announces the compaction, then lesson 8's does it.
    assert!(
        stderr.contains("[recovery] prompt too long — compacting the history"),
        "{stderr}"
    );
    let received = server.received();
    // The refused call, the summary, the retry, then the extraction side query.
    assert_eq!(received.len(), 4);
    let side = received[1].json();
    assert!(side.get("tools").is_none());
    assert!(
        side["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You summarise a coding agent's conversation"),
        "{side}"
    );
    let retry = received[2].json();
    let first = retry["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("[Reactive compact]"), "{first}");
    assert!(first.contains("SUMMARY: the user said hello"), "{first}");
    assert!(dir.path().join(".transcripts").is_dir());
    let extraction = received[3].json();
    assert!(extraction.get("tools").is_none());
    assert!(
        extraction["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello again"),
        "{extraction}"
    );
}

#[tokio::test]
async fn over_the_wire_a_string_encoded_list_is_accepted_and_the_reminder_follows_results() {
    let dir = tempfile::tempdir().unwrap();
    let bash = |id: &str| {
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": "echo working"}}),
            ],
            "tool_use",
        ))
    };
    let encoded = r#"[{"content": "plan", "status": "completed"}, {"content": "build", "status": "in_progress"}]"#;
    let server = FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "tool_use", "id": "toolu_plan", "name": "todo_write", "input": {"todos": encoded}}),
            ],
            "tool_use",
        )),
        bash("toolu_a"),
        bash("toolu_b"),
        bash("toolu_c"),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "all done"})],
            "end_turn",
        )),
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = run(
        dir.path(),
        &["-p", "build it"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await;

    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("[✓] plan") && stdout.contains("[▸] build"),
        "{stdout}"
    );
    let received = server.received();
    assert_eq!(received.len(), 6);
    let second = received[1].json();
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_plan");
    assert!(result.get("is_error").is_none(), "{result}");
    // Three rounds without todo_write: the fifth request ends with the
    // last bash result, then the reminder, in the same user message.
    let fifth = received[4].json();
    let last = fifth["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_c");
    assert_eq!(
        last["content"][1]["text"],
        "<reminder>Update your todos.</reminder>"
    );
    assert!(!received[3].body.contains("<reminder>"));
}

#[tokio::test]
async fn a_deny_listed_command_is_refused_and_the_model_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_model(&[bash_call("toolu_1", "echo sudo rm -rf / > ran.txt")]).await;

    let output = run_against(dir.path(), &server, &[]).await;

    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("finished"), "{stdout}");
    let results = sent_results(&server);
    assert_eq!(results[0].0, "toolu_1");
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0]
            .1
            .starts_with("Permission denied: 'rm -rf /' is on the deny list"),
        "{results:?}"
    );
    assert!(!dir.path().join("ran.txt").exists());
    // The permission hook blocked it, so the log hook after it never ran,
    // and neither did the tool or its PostToolUse hooks.
    let stderr = text(&output.stderr);
    assert!(stderr.contains("[HOOK] UserPromptSubmit"), "{stderr}");
    assert!(!stderr.contains("[HOOK] PreToolUse"), "{stderr}");
    assert!(!stderr.contains("[HOOK] PostToolUse"), "{stderr}");
    assert!(
        stderr.contains("[HOOK] Stop: session used 1 tool call"),
        "{stderr}"
    );
}

#[tokio::test]
async fn with_no_terminal_a_question_is_a_no_that_says_how_to_approve() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim.txt"), "keep me").unwrap();
    let server = fake_model(&[bash_call("toolu_1", "rm victim.txt")]).await;

    let output = run_against(dir.path(), &server, &[]).await;

    assert!(output.status.success(), "{}", text(&output.stderr));
    let results = sent_results(&server);
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0].1.contains("no terminal to ask") && results[0].1.contains("--yes"),
        "{results:?}"
    );
    assert!(dir.path().join("victim.txt").exists());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("Tool: bash(rm victim.txt)"), "{stderr}");
}

#[tokio::test]
async fn yes_pre_approves_questions_but_not_the_deny_list() {
    for flag in ["--yes", "--approve-all"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("victim.txt"), "delete me").unwrap();
        let server = fake_model(&[
            bash_call("toolu_1", "rm victim.txt"),
            bash_call("toolu_2", "echo sudo rm -rf / > ran.txt"),
        ])
        .await;

        let output = run_against(dir.path(), &server, &[flag]).await;

        assert!(output.status.success(), "{}", text(&output.stderr));
        let results = sent_results(&server);
        assert!(!results[0].2, "{flag}: {results:?}");
        assert!(!dir.path().join("victim.txt").exists(), "{flag}");
        assert!(results[1].2, "{flag}: {results:?}");
        assert!(results[1].1.contains("deny list"), "{flag}: {results:?}");
        assert!(!dir.path().join("ran.txt").exists(), "{flag}");
        assert!(text(&output.stderr).contains("pre-approved"), "{flag}");
    }
}

#[tokio::test]
async fn streams_runs_the_tool_and_sends_back_a_paired_result() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "text", "text": "Running it."}),
                json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo tool-output-42"}}),
            ],
            "tool_use",
        )),
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "finished"})],
            "end_turn",
        )),
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = run(
        dir.path(),
        &["-p", "echo something"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await;

    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("Running it.") && stdout.contains("finished"),
        "{stdout}"
    );
    let received = server.received();
    assert_eq!(received.len(), 3);
    assert_eq!(received[0].header("x-api-key"), Some("sk-test-key"));
    let second = received[1].json();
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("tool-output-42"),
        "{result}"
    );
}

#[tokio::test]
async fn an_api_error_is_one_clear_line_and_a_failure_status() {
    // Ten overloads: every attempt the policy allows fails.
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(
        (0..10)
            .map(|_| {
                FakeResponse::json(
                    529,
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                )
            })
            .collect(),
    )
    .await
    .unwrap();

    let output = run(
        dir.path(),
        &["-p", "hello"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
            ("RECOVERY_BASE_DELAY_MS", "0"),
        ],
    )
    .await;

    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    // Ten attempts, and no extraction side query: the turn did not end well.
    assert_eq!(server.received().len(), 10);
    assert!(
        stderr.contains("[recovery] 529 overloaded — giving up after 10 attempts"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: the model is overloaded"),
        "{stderr}"
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

    let output = run(
        dir.path(),
        &["-p", "hello"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
    )
    .await;

    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(server.received().len(), 1);
    assert!(
        stderr.contains("[recovery] authentication failed — not retried"),
        "{stderr}"
    );
    assert!(stderr.contains("error: authentication failed"), "{stderr}");
}

#[tokio::test]
async fn a_preference_stated_in_one_run_is_recalled_in_a_new_process() {
    let dir = tempfile::tempdir().unwrap();
    // Run 1: the turn's reply, then the extraction side query's answer.
    let extraction = json!([{
        "name": "user-prefers-tabs",
        "type": "user",
        "description": "User prefers tabs over spaces for indentation",
        "body": "Indent with tabs, never spaces (memory-body-42)."
    }]);
    let first = FakeServer::start(vec![
        text_reply("Noted: tabs."),
        text_reply(&extraction.to_string()),
    ])
    .await
    .unwrap();
    let vars = [
        ("ANTHROPIC_BASE_URL", first.url()),
        ("ANTHROPIC_API_KEY", "sk-test-key"),
    ];
    let output = run(dir.path(), &["-p", "I prefer tabs over spaces"], &vars).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("[Memory: extracted 1 new memory: user-prefers-tabs]"),
        "{stderr}"
    );
    let received = first.received();
    assert_eq!(received.len(), 2);
    // No memory yet: the prompt was assembled without a memory section.
    assert!(stderr.contains(ASSEMBLED), "{stderr}");
    let system = received[0].json()["system"].to_string();
    assert!(
        !system.contains("# Memory") && !system.contains("user-prefers-tabs"),
        "{system}"
    );
    assert!(received[1].json().get("tools").is_none());
    assert!(dir.path().join(".memory/user-prefers-tabs.md").is_file());
    // A broken file in the store must not stop the next run.
    std::fs::write(
        dir.path().join(".memory/broken.md"),
        "no frontmatter here\n",
    )
    .unwrap();

    // Run 2, a new process: the recall side query, the turn, extraction.
    let second = FakeServer::start(vec![
        text_reply("[\"user-prefers-tabs\"]"),
        text_reply("I'll indent with tabs."),
        text_reply("[]"),
    ])
    .await
    .unwrap();
    let vars = [
        ("ANTHROPIC_BASE_URL", second.url()),
        ("ANTHROPIC_API_KEY", "sk-test-key"),
    ];
    let output = run(dir.path(), &["-p", "Create hello.py"], &vars).await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("I'll indent with tabs."), "{stdout}");
    assert!(!stdout.contains("user-prefers-tabs"), "{stdout}");
    assert_eq!(
        stderr
            .matches("warning: skipping malformed memory file")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("broken.md"), "{stderr}");
    assert!(
        stderr.contains("[Memory: recalled user-prefers-tabs]"),
        "{stderr}"
    );
    assert!(stderr.contains(ASSEMBLED_WITH_MEMORY), "{stderr}");
    let received = second.received();
    assert_eq!(received.len(), 3);
    let recall = received[0].json();
    assert!(recall.get("tools").is_none());
    assert!(
        recall["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Create hello.py")
    );
    let main = received[1].json();
    assert!(main.get("tools").is_some());
    // The memory section is the last section of the one cached block,
    // after the agent's own sections and the skill catalog.
    let system = main["system"].as_array().unwrap();
    assert_eq!(system.len(), 1, "{system:?}");
    let system = system[0]["text"].as_str().unwrap();
    let section = &system[system.find("\n\n# Memory\n").unwrap()..];
    assert!(
        section.ends_with("unless the user now says otherwise."),
        "{section}"
    );
    assert!(system.contains("Skills available:"), "{system}");
    assert!(
        system.contains(
            "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md"
        ),
        "{system}"
    );
    let messages = main["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    let content = messages[0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2);
    assert_eq!(content[0]["text"], "Create hello.py");
    let memories = content[1]["text"].as_str().unwrap();
    assert!(memories.starts_with("<memories>"), "{memories}");
    assert!(memories.contains("memory-body-42"), "{memories}");
    // Nothing new in run 2: still the one memory (and the broken file).
    let mut files: Vec<String> = std::fs::read_dir(dir.path().join(".memory"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["MEMORY.md", "broken.md", "user-prefers-tabs.md"]);
}
