//! Lesson 10's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json`, and three prompts piped into the REPL. The system
//! prompt is assembled for the first request, assembled again (now with a
//! memory section) only once the first turn's extraction saved a memory,
//! and reused for every other request. A second run in the same directory
//! starts with the memory and still succeeds.
//!
//! The binary does not show what it sent the model, so the same script is
//! also played in-process, where the requests can be read back.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use serde_json::Value;
use shared::history::validate;
use shared::model::scripted::{Script, ScriptedModel};
use shared::protocol::{ContentBlock, Message, ToolResult, ToolUse};

use crate::support;

const PROMPTS: &str = "I prefer tabs over spaces.\nCreate hello.py with a greet function.\nWhich tools do you have?\n";
const ASSEMBLED: &str =
    "[prompt] assembled from sections: identity, workspace, tools, planning, skills\n";
const ASSEMBLED_WITH_MEMORY: &str =
    "[prompt] assembled from sections: identity, workspace, tools, planning, skills, memory\n";
const CACHE_HIT: &str = "[prompt] cache hit: system prompt unchanged\n";
const EXTRACTED: &str = "[memory] extracted 1 new memory: user-prefers-tabs\n";
const RECALLED: &str = "[memory] recalled user-prefers-tabs\n";
const TABS_LINE: &str =
    "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Whether the terminal showed `line` as a tool's output. Tool output is
/// indented by two spaces; the model's text and the `> bash: command` lines
/// are not, so a match here was printed by a command that really ran, not
/// by the script's text or by the echo of the script's command.
fn tool_printed(stdout: &str, line: &str) -> bool {
    stdout
        .lines()
        .any(|shown| shown.strip_prefix("  ") == Some(line))
}

/// Each tool call of `history` with the result that answers it (by id), in
/// order: both halves of every pair.
fn calls_and_results(history: &[Message]) -> Vec<(ToolUse, ToolResult)> {
    let results: Vec<&ToolResult> = history
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(
        results.len(),
        history.iter().flat_map(Message::tool_uses).count(),
        "one result per call"
    );
    history
        .iter()
        .flat_map(Message::tool_uses)
        .map(|call| {
            let result = results
                .iter()
                .find(|result| result.tool_use_id == call.id)
                .unwrap_or_else(|| panic!("no result answers {call:?}"));
            (call.clone(), (*result).clone())
        })
        .collect()
}

/// Runs the demo in `dir` and returns its standard output and error,
/// after checking that it exited with success.
async fn run_demo(dir: &Path) -> (String, String) {
    let output = support::run_binary(dir, &[], &[], PROMPTS).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // Side queries' answers never reach the terminal.
    assert!(!stdout.contains("[\"user-prefers-tabs\"]"), "{stdout}");
    (stdout, stderr)
}

/// The `[prompt]` and `[memory]` lines of standard error, in order.
fn prompt_and_memory_lines(stderr: &str) -> Vec<String> {
    stderr
        .split_inclusive('\n')
        .filter(|line| line.starts_with("[prompt] ") || line.starts_with("[memory] "))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_demo_assembles_the_prompt_again_only_when_a_memory_is_saved() {
    let dir = tempfile::tempdir().unwrap();

    let (stdout, stderr) = run_demo(dir.path()).await;

    // Built for the first request; built again, with the memory section,
    // for the first request after the extraction saved a memory; reused
    // for every other request, the next turn's included.
    assert_eq!(
        prompt_and_memory_lines(&stderr),
        [
            ASSEMBLED,
            EXTRACTED,
            RECALLED,
            ASSEMBLED_WITH_MEMORY,
            CACHE_HIT,
            CACHE_HIT,
            RECALLED,
            CACHE_HIT,
        ],
        "{stderr}"
    );
    assert!(tool_printed(&stdout, "Created hello.py."), "{stdout}");
    assert!(
        tool_printed(&stdout, "hello.py is indented with tabs."),
        "{stdout}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap(),
        format!("{TABS_LINE}\n")
    );
    let hello = fs::read_to_string(dir.path().join("hello.py")).unwrap();
    assert!(hello.contains("def greet(name):\n\treturn"), "{hello}");

    // Again, in the same directory: the memory is in the very first
    // prompt, which nothing changes after that.
    let (stdout, stderr) = run_demo(dir.path()).await;

    assert_eq!(
        prompt_and_memory_lines(&stderr),
        [
            RECALLED,
            ASSEMBLED_WITH_MEMORY,
            RECALLED,
            CACHE_HIT,
            CACHE_HIT,
            CACHE_HIT,
            RECALLED,
            CACHE_HIT,
        ],
        "{stderr}"
    );
    assert!(
        tool_printed(&stdout, "hello.py already exists; leaving it as it is."),
        "{stdout}"
    );
    assert!(
        tool_printed(&stdout, "hello.py is indented with tabs."),
        "{stdout}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("hello.py")).unwrap(),
        hello
    );
    assert_eq!(
        fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap(),
        format!("{TABS_LINE}\n")
    );
}

#[tokio::test]
async fn the_demo_answers_one_prompt_in_the_workdir_it_is_given() {
    let cwd = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();
    // `--workdir` names the workspace; the process runs elsewhere.
    let mut command = support::binary(workdir.path());
    command
        .args(["-p", "hello"])
        .current_dir(cwd.path())
        .stdin(Stdio::null());

    let output = command.output().await.unwrap();

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    // The prompt was assembled without a memory section, and the turn's
    // extraction saved one.
    assert_eq!(
        prompt_and_memory_lines(&stderr),
        [ASSEMBLED, EXTRACTED],
        "{stderr}"
    );
    // Memory works in the workdir, not in the current directory.
    assert_eq!(
        fs::read_to_string(workdir.path().join(".memory/MEMORY.md")).unwrap(),
        format!("{TABS_LINE}\n")
    );
    assert!(!cwd.path().join(".memory").exists());
}

/// The `system` field of a recorded request, as the bytes that were sent.
fn system_bytes(request: &Value) -> String {
    serde_json::to_string(&request["system"]).unwrap()
}

#[tokio::test]
async fn the_demo_script_sends_the_same_prompt_bytes_until_a_memory_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::from_json(lesson::LESSON.demo_script).unwrap();
    // A model that fails on a request the script does not expect.
    let model = Arc::new(ScriptedModel::new(script.replies).with_side_rules(script.side_replies));
    let mut agent = support::agent_with(dir.path(), model.clone(), support::options());
    let mut history = Vec::new();

    for prompt in PROMPTS.lines() {
        let (outcome, _) = support::turn(&mut agent, &mut history, prompt).await;
        outcome.unwrap();
    }

    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    // The two bash calls ran, each answered by its real output: the file
    // made, then the check that it is indented with tabs.
    let pairs = calls_and_results(&history);
    assert_eq!(pairs.len(), 2, "{pairs:?}");
    for (call, result) in &pairs {
        assert_eq!(call.name, "bash");
        assert!(!result.is_error, "{}", result.text());
    }
    assert!(
        pairs[0].0.input["command"]
            .as_str()
            .unwrap()
            .contains("> hello.py")
    );
    assert_eq!(pairs[0].1.text().trim_end(), "Created hello.py.");
    assert!(
        pairs[1].0.input["command"]
            .as_str()
            .unwrap()
            .starts_with("if grep -q")
    );
    assert_eq!(
        pairs[1].1.text().trim_end(),
        "hello.py is indented with tabs."
    );
    // Turn 1: one request; turn 2: three; turn 3: one. Memory's recall
    // and extraction are side queries, apart from these.
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(model.side_requests().len(), 5);
    assert!(!system_bytes(&requests[0]).contains("# Memory"));
    // The memory saved after turn 1 is in the next request, and the prompt
    // stays the same bytes from there on, into turn 3.
    assert!(system_bytes(&requests[1]).contains(TABS_LINE));
    for request in &requests[2..] {
        assert_eq!(system_bytes(request), system_bytes(&requests[1]));
    }
    assert_eq!(
        agent.hooks().prompt().stats(),
        lesson::prompt::Stats {
            assembled: 2,
            hits: 3
        }
    );
}
