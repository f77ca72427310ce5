//! Lesson 6's demo, as the chapter runs it: no key, so the demo model plays
//! `demo.json` with the real tools. A subagent writes `string_tools.py` and
//! its tests, a second one finds the testing framework by reading them, and
//! a third one's `rm` meets the parent's permission hook.

use std::sync::Arc;

use lesson::permission::ScriptedApprover;
use serde_json::Value;
use shared::history::validate;
use shared::model::scripted::{Script, ScriptedModel};

use crate::support;

/// The chapter's first command, and the three prompts it pipes next.
const FIRST_PROMPT: &str = "use a task to create string_tools.py with slugify, then verify it";
const PROMPTS: [&str; 3] = [
    "create string_tools.py",
    "find the testing framework",
    "remove __pycache__",
];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Asserts that `lines` occur in `output` in this order.
fn in_order(output: &str, lines: &[&str]) {
    let mut from = 0;
    for line in lines {
        match output[from..].find(line) {
            Some(at) => from += at + line.len(),
            None => panic!("{line:?} not found in order in:\n{output}"),
        }
    }
}

#[tokio::test]
async fn the_demo_binary_delegates_to_subagents_and_runs_again() {
    let dir = tempfile::tempdir().unwrap();

    let output = support::run_binary(dir.path(), &["-p", FIRST_PROMPT], &[], "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // The parent shows its own calls; the subagent's work arrives as `sub`
    // notices, between the task call's hooks, and passes the same hooks.
    in_order(
        &stdout,
        &[
            "> task: ",
            "[subagent finished in 2 rounds]",
            "> bash: python3",
        ],
    );
    in_order(
        &stderr,
        &[
            "[hook] PreToolUse: task(",
            "[sub] spawned: Create string_tools.py",
            "[sub] > write_file: string_tools.py",
            "[hook] PreToolUse: write_file(string_tools.py)",
            "[sub] > write_file: test_string_tools.py",
            "[hook] PreToolUse: write_file(test_string_tools.py)",
            "[sub] done in 2 rounds; its 4 messages stay out of the parent's history",
            "[hook] PostToolUse: task returned output",
            "[hook] PreToolUse: bash(python3",
            // Only the parent's two calls count: task and bash.
            "[hook] Stop: session used 2 tool calls",
        ],
    );
    assert!(!stdout.contains("> write_file"), "{stdout}");
    let module = std::fs::read_to_string(dir.path().join("string_tools.py")).unwrap();
    assert!(
        module.contains("def slugify(text: str) -> str:"),
        "{module}"
    );
    assert!(dir.path().join("test_string_tools.py").exists());

    // The chapter's second command, in the same directory: the REPL with
    // three piped prompts plays the script from the start. A Python cache
    // is there to clean up (the first run's check may have made it).
    let cache = dir.path().join("__pycache__");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("keep.pyc"), "").unwrap();
    let input = format!("{}\n", PROMPTS.join("\n"));

    let again = support::run_binary(dir.path(), &["--demo"], &[], &input).await;

    let (stdout, stderr) = (text(&again.stdout), text(&again.stderr));
    assert!(again.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(stderr.matches("[sub] spawned: ").count(), 3, "{stderr}");
    assert_eq!(stderr.matches("[sub] done in ").count(), 3, "{stderr}");
    // The exploring subagent found and read the tests the first one wrote.
    in_order(
        &stderr,
        &[
            "[sub] spawned: Find out which testing framework",
            "[sub] > glob: **/*test*.py",
            "[sub] > read_file: test_string_tools.py",
            "[sub] done in 3 rounds",
        ],
    );
    // The cleaning subagent's rm asked through the parent's permission
    // hook; with no terminal the answer was no, and nothing was removed.
    assert!(
        stderr.contains("Tool: bash(rm -rfv __pycache__)"),
        "{stderr}"
    );
    in_order(
        &stderr,
        &[
            "[sub] > bash: rm -rfv __pycache__",
            "[sub]   error: Permission denied",
            "no terminal to ask",
        ],
    );
    assert!(cache.join("keep.pyc").exists());
    // The session's parent calls: task and bash, then task, then task.
    assert!(
        stderr.contains("[hook] Stop: session used 4 tool calls"),
        "{stderr}"
    );
}

/// Whether a request came from a subagent (by its own system prompt).
fn from_subagent(request: &Value) -> bool {
    request["system"].to_string().contains("You are a subagent")
}

#[tokio::test]
async fn the_demo_script_keeps_each_subagents_work_out_of_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("__pycache__")).unwrap();
    let script = Script::from_json(lesson::LESSON.demo_script).unwrap();
    // Strict about its length: a request past the script's end is an error.
    let model = Arc::new(ScriptedModel::new(script.replies).with_side_rules(script.side_replies));
    // No to every question, as with no terminal.
    let approver = ScriptedApprover::new([]);
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    let mut history = Vec::new();

    let mut spawned = 0;
    for prompt in PROMPTS {
        let (outcome, recorder) = support::turn(&mut agent, &mut history, prompt).await;
        outcome.unwrap();
        validate(&history).unwrap();
        // The parent itself called only `task` and `bash`.
        assert!(
            recorder
                .calls
                .iter()
                .all(|call| call.name == "task" || call.name == "bash"),
            "{:?}",
            recorder.calls
        );
        spawned += recorder
            .notices_tagged("sub")
            .iter()
            .filter(|line| line.starts_with("spawned: "))
            .count();
    }
    assert_eq!(model.remaining(), 0);
    assert_eq!(spawned, 3);

    let requests = model.requests();
    let (sub, parent): (Vec<&Value>, Vec<&Value>) =
        requests.iter().partition(|request| from_subagent(request));
    // Two, three and two rounds of subagents; six calls of the parent.
    assert_eq!(sub.len(), 7);
    assert_eq!(parent.len(), 7);
    // The exploring subagent was sent the test file it read; the parent
    // never was, only the answer.
    let test_file = "self.assertEqual(slugify(";
    assert!(
        sub.iter()
            .any(|request| request.to_string().contains(test_file))
    );
    assert!(
        parent
            .iter()
            .all(|request| !request.to_string().contains(test_file))
    );
    // Three turns of the parent: 6 + 4 + 4 messages.
    assert_eq!(history.len(), 14);
    // The third subagent's rm was put to the parent's approver, refused,
    // and the directory stays.
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].summary(), "bash(rm -rfv __pycache__)");
    assert!(dir.path().join("__pycache__").exists());
}
