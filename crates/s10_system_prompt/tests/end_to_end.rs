//! The lesson binary, run as a user runs it: with no key (the demo model)
//! and against a local fake of the Anthropic API.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::json;
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};
use tokio::io::AsyncWriteExt;

const BINARY: &str = env!("CARGO_BIN_EXE_s10_system_prompt");

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
async fn demo_model_assembles_the_prompt_again_only_when_a_memory_is_saved_without_a_key() {
    let dir = tempfile::tempdir().unwrap();

    // Three prompts piped into the REPL: one session, three turns.
    let output = run_with_input(
        dir.path(),
        &[],
        &[],
        "I prefer tabs over spaces.\nCreate hello.py with a greet function.\nWhich tools do you have?\n",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // Built for the first request; built again, with the memory section,
    // for the first request after the extraction saved a memory; reused
    // for every other request, the next turn's included.
    assert_in_order(
        &stderr,
        &[
            ASSEMBLED,
            "[Memory: extracted 1 new memory: user-prefers-tabs]",
            "[Memory: recalled user-prefers-tabs]",
            ASSEMBLED_WITH_MEMORY,
            CACHE_HIT,
            CACHE_HIT,
            CACHE_HIT,
        ],
    );
    assert_eq!(stderr.matches("[assembled]").count(), 2, "{stderr}");
    assert_eq!(stderr.matches("[cache hit]").count(), 3, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(
        stdout.contains("hello.py is indented with tabs."),
        "{stdout}"
    );
    // Side queries never reach the terminal.
    assert!(!stdout.contains("[\"user-prefers-tabs\"]"), "{stdout}");
    let index = std::fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap();
    assert_eq!(
        index,
        "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md\n"
    );
    let hello = std::fs::read_to_string(dir.path().join("hello.py")).unwrap();
    assert!(hello.contains("\n\treturn"), "{hello}");
}

#[tokio::test]
async fn demo_model_answers_one_prompt_in_an_empty_workdir() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();

    let output = run(
        dir.path(),
        &["--workdir", workdir.path().to_str().unwrap(), "-p", "hello"],
        &[],
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.contains("There is no memory section yet"),
        "{stdout}"
    );
    assert_eq!(stderr.matches("[assembled]").count(), 1, "{stderr}");
    assert!(stderr.contains(ASSEMBLED), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // Memory works in the workdir, not in the current directory.
    assert!(workdir.path().join(".memory/MEMORY.md").is_file());
    assert!(!dir.path().join(".memory").exists());
}

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
    assert!(
        stderr.contains("[compact] reactive compact: prompt too long"),
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
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![FakeResponse::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
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
    assert!(
        stderr.contains("error: the model is overloaded"),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-test-key"));
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
