//! Lesson 9's demo, as the chapter runs it: no key, so the demo model plays
//! `demo.json`, and two prompts piped into the REPL. The preference stated
//! in the first turn is extracted to `.memory/`, then recalled and applied
//! to the `hello.py` of the second. A second run in the same directory
//! finds the memory already saved and still succeeds.
//!
//! The binary does not show what it sent the model, so the same script is
//! also played in-process, where the requests can be read back.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use shared::history::validate;
use shared::model::scripted::{Script, ScriptedModel};
use shared::protocol::{ContentBlock, Message, ToolResult, ToolUse};

use crate::support;

const PROMPTS: &str = "I prefer tabs over spaces.\nCreate hello.py with a greet function.\n";
const INDEX: &str =
    "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md\n";

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
    // Nothing the memory layer did went wrong.
    assert!(!stderr.contains("warning"), "{stderr}");
    // Side queries' answers never reach the terminal.
    assert!(!stdout.contains("[\"user-prefers-tabs\"]"), "{stdout}");
    assert!(!stdout.contains("\"type\": \"user\""), "{stdout}");
    (stdout, stderr)
}

/// The position of `line` in `text`, which must hold it.
fn position(text: &str, line: &str) -> usize {
    text.find(line)
        .unwrap_or_else(|| panic!("{line:?} not in:\n{text}"))
}

#[tokio::test]
async fn the_demo_saves_a_preference_then_recalls_and_applies_it_twice_over() {
    let dir = tempfile::tempdir().unwrap();

    let (stdout, stderr) = run_demo(dir.path()).await;

    // Turn 1 saved the preference; turn 2 recalled it and used it.
    let extracted = position(
        &stderr,
        "[memory] extracted 1 new memory: user-prefers-tabs\n",
    );
    let recalled = position(&stderr, "[memory] recalled user-prefers-tabs\n");
    assert!(extracted < recalled, "{stderr}");
    assert!(tool_printed(&stdout, "Created hello.py."), "{stdout}");
    assert!(
        tool_printed(&stdout, "hello.py is indented with tabs."),
        "{stdout}"
    );
    let memory = fs::read_to_string(dir.path().join(".memory/user-prefers-tabs.md")).unwrap();
    // Dated when it was written (the time itself differs from run to run).
    assert!(
        memory.starts_with("---\nname: user-prefers-tabs\n")
            && memory.contains("\ntype: user\nupdated: 20")
            && memory.contains("Z\n---\n"),
        "{memory}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap(),
        INDEX
    );
    let hello = fs::read_to_string(dir.path().join("hello.py")).unwrap();
    assert!(hello.contains("def greet(name):\n\treturn"), "{hello}");
    assert!(!hello.contains("    "), "{hello}");

    // Again, in the same directory: the memory is there from the start, so
    // both turns recall it, and nothing new is extracted or overwritten.
    let (stdout, stderr) = run_demo(dir.path()).await;

    assert_eq!(
        stderr
            .matches("[memory] recalled user-prefers-tabs\n")
            .count(),
        2,
        "{stderr}"
    );
    assert!(!stderr.contains("[memory] extracted"), "{stderr}");
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
        fs::read_to_string(dir.path().join(".memory/user-prefers-tabs.md")).unwrap(),
        memory
    );
    assert_eq!(
        fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap(),
        INDEX
    );
}

/// The text of a request's system prompt, its blocks a blank line apart.
fn system_text(request: &Value) -> String {
    request["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The text of a side query's one message.
fn side_prompt(request: &Value) -> &str {
    request["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
}

#[tokio::test]
async fn the_demo_script_sends_the_saved_memory_in_the_next_request() {
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
    // Turn 1: the reply, then the extraction. Turn 2: the recall, three
    // rounds, the extraction.
    let side: Vec<&str> = model
        .side_requests()
        .iter()
        .map(|request| side_prompt(request).split_whitespace().next().unwrap())
        .map(|word| match word {
            "Read" => "extract",
            "Which" => "recall",
            other => panic!("unexpected side query starting {other:?}"),
        })
        .collect();
    assert_eq!(side, ["extract", "recall", "extract"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    // The first request knew no memory; the first after the extraction has
    // the index in its system prompt and the recalled memory after the
    // prompt.
    assert!(!system_text(&requests[0]).contains("# Memory"));
    assert!(
        system_text(&requests[1]).contains(INDEX.trim_end()),
        "{}",
        system_text(&requests[1])
    );
    let last = requests[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        last["content"][0]["text"],
        "Create hello.py with a greet function."
    );
    let memories = last["content"][1]["text"].as_str().unwrap();
    assert!(memories.starts_with("<memories>"), "{memories}");
    assert!(memories.contains("Indent with tabs"), "{memories}");
    let hello = fs::read_to_string(dir.path().join("hello.py")).unwrap();
    assert!(hello.contains("\n\treturn"), "{hello}");
}
