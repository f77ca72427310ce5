//! Lesson 5's demo, as the chapter runs it: no key, so the demo model plays
//! `demo.json` with the real tools. It plans three edits to `greet.py`,
//! works through them, "forgets" the list for three rounds and is reminded.

use std::sync::Arc;

use lesson::todo::{REMINDER, TOOL_NAME};
use shared::history::validate;
use shared::model::scripted::{Script, ScriptedModel};
use shared::protocol::{ContentBlock, Message, Role};

use crate::support;

/// The chapter's prompt.
const PROMPT: &str = "add type hints, docstrings and a main guard to greet.py";

/// What the finished `greet.py` holds.
const FINISHED: [&str; 3] = [
    "def greet(name: str) -> str:",
    "\"\"\"Return a greeting for `name`.\"\"\"",
    "if __name__ == \"__main__\":\n    main()",
];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn the_demo_binary_plans_edits_and_is_reminded_and_runs_again() {
    let dir = tempfile::tempdir().unwrap();

    let output = support::run_binary(dir.path(), &["-p", PROMPT], &[], "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // The list is shown as it moves from pending to in progress to completed.
    let planned = stdout.find("[ ] Add type hints").unwrap();
    let started = stdout.find("[▸] Add type hints").unwrap();
    let finished = stdout.find("[✓] Add a main guard").unwrap();
    assert!(planned < started && started < finished, "{stdout}");
    // The reminder was sent once, and the list's last update came after it.
    let reminder = "[todo_write] reminder sent: open tasks, and no update for 3 rounds";
    assert_eq!(stderr.matches(reminder).count(), 1, "{stderr}");
    let last_update = stderr.rfind("[hook] PreToolUse: todo_write(").unwrap();
    assert!(stderr.find(reminder).unwrap() < last_update, "{stderr}");
    // The edits really happened, on the file the demo created.
    let greet = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
    for expected in FINISHED {
        assert!(greet.contains(expected), "{greet}");
    }

    // A second run in the same directory sets the finished file aside
    // instead of editing it twice, and makes the same changes again.
    let again = support::run_binary(dir.path(), &["-p", PROMPT], &[], "").await;
    let (stdout, stderr) = (text(&again.stdout), text(&again.stderr));
    assert!(again.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("moved it to greet.py.bak"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py.bak")).unwrap(),
        greet
    );
    let greet_again = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
    assert_eq!(
        greet_again, greet,
        "the second run's edits match the first's"
    );
}

/// How many reminders a request carried.
fn reminders(request: &serde_json::Value) -> usize {
    let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
    validate(&messages).unwrap();
    messages
        .iter()
        .flat_map(|message| &message.content)
        .filter(|block| matches!(block, ContentBlock::Text { text, .. } if text == REMINDER))
        .count()
}

#[tokio::test]
async fn the_demo_script_sends_the_reminder_the_chapter_describes() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::from_json(lesson::LESSON.demo_script).unwrap();
    // Strict about its length: a request past the script's end is an error.
    let model = Arc::new(ScriptedModel::new(script.replies).with_side_rules(script.side_replies));
    let mut agent = support::agent_with(dir.path(), model.clone(), support::options());
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, PROMPT).await;

    outcome.unwrap();
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    // The eighth request follows three rounds without todo_write (the main
    // guard, the run, the reread), and carries the reminder after the
    // reread's result.
    let requests = model.requests();
    let counts: Vec<usize> = requests.iter().map(reminders).collect();
    assert_eq!(counts, [0, 0, 0, 0, 0, 0, 0, 1, 1]);
    let eighth: Vec<Message> = serde_json::from_value(requests[7]["messages"].clone()).unwrap();
    let last = eighth.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(
        matches!(
            last.content.as_slice(),
            [ContentBlock::ToolResult(result), ContentBlock::Text { text, .. }]
                if text == REMINDER && result.text().contains("if __name__")
        ),
        "{last:?}"
    );
    // The reply to it is the todo_write that brings the list up to date.
    let calls: Vec<&str> = history[15]
        .tool_uses()
        .map(|call| call.name.as_str())
        .collect();
    assert_eq!(calls, [TOOL_NAME]);
    assert_eq!(recorder.notices_tagged(TOOL_NAME).len(), 1);
    // Every tool call of the script worked, on a file it made itself.
    assert_eq!(recorder.results.len(), 11);
    assert!(
        recorder.results.iter().all(|result| !result.is_error),
        "{:?}",
        recorder.results
    );
    let greet = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
    for expected in FINISHED {
        assert!(greet.contains(expected), "{greet}");
    }
}
