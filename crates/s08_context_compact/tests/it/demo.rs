//! Lesson 8's demo, as the chapter runs it: `-p "find the errors in the
//! service logs"` with no key, so the demo model drives the real tools. It
//! generates five logs, reads them all at once (over the tool-result
//! budget), greps, writes a report, and calls `compact`; the summary comes
//! from the script's side rule. The binary is run twice in one directory;
//! the same script is also run in-process, to see what the model was sent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lesson::compact::summary;
use shared::history::validate;
use shared::model::scripted::{Script, ScriptedModel};
use shared::protocol::{ContentBlock, Message};

use crate::support;

/// The chapter's prompt.
const PROMPT: &str = "find the errors in the service logs";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The files in `dir` (relative to the workspace), sorted; none if it does
/// not exist.
fn files(root: &Path, dir: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    paths
}

/// What the terminal showed as tool output: the lines indented by two
/// spaces. The model's text and the `> tool: input` lines are not indented,
/// so a line found here was printed by a command that really ran, not by
/// the script or by the echo of its command.
fn tool_output(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("  "))
        .collect()
}

/// The lines of `grep -n ERROR demo_logs/*.log` for the two errors the
/// script's generator puts at line 900.
const ERROR_LINES: [&str; 2] = [
    "demo_logs/billing.log:900:billing line 0900: ERROR upstream timeout after 30 s",
    "demo_logs/worker.log:900:worker line 0900: ERROR upstream timeout after 30 s",
];

/// The tool output lines that report an error, in order.
fn errors_shown(stdout: &str) -> Vec<&str> {
    tool_output(stdout)
        .into_iter()
        .filter(|line| line.contains(": ERROR"))
        .collect()
}

/// Where `needle` first occurs in `haystack`, which must contain it.
fn position(haystack: &str, needle: &str) -> usize {
    haystack
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} missing from:\n{haystack}"))
}

#[tokio::test]
async fn the_demo_runs_every_layer_but_snip_on_real_files_twice_in_one_directory() {
    let dir = tempfile::tempdir().unwrap();

    // The first run generates the logs.
    let output = support::run_binary(dir.path(), &["-p", PROMPT], &[], "").await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("[demo model]"), "{stderr}");
    assert!(
        tool_output(&stdout)
            .contains(&"Created demo_logs/ with five service logs of 2000 lines each."),
        "{stdout}"
    );
    // The logs are real files, with errors only where the generator put them.
    for service in ["api", "auth", "billing", "search", "worker"] {
        let log =
            std::fs::read_to_string(dir.path().join(format!("demo_logs/{service}.log"))).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2000, "{service}");
        let errors: Vec<usize> = (0..lines.len())
            .filter(|&index| lines[index].contains("ERROR"))
            .map(|index| index + 1)
            .collect();
        let expected: &[usize] = if ["billing", "worker"].contains(&service) {
            &[900]
        } else {
            &[]
        };
        assert_eq!(errors, expected, "{service}");
    }
    // Each layer announces itself, in the order the demo reaches it.
    let budget = position(
        &stderr,
        "[compact] tool-result budget: 250280 chars over 200000; saved 2 results",
    );
    let micro = position(
        &stderr,
        "[compact] micro-compact: cleared 3 old tool results",
    );
    let summary = position(
        &stderr,
        "[compact] auto compact (the model called compact): transcript saved to .transcripts/",
    );
    assert!(budget < micro && micro < summary, "{stderr}");
    assert!(!stderr.contains("[compact] snip"), "{stderr}");
    assert!(!stderr.contains("summary failed"), "{stderr}");
    // The real grep found the two errors, and nothing else (the saved
    // results are counted, with no error in their first lines).
    assert_eq!(errors_shown(&stdout), ERROR_LINES, "{stdout}");

    // The real files: the logs, the report, two saved results, one
    // transcript.
    let report = std::fs::read_to_string(dir.path().join("demo_logs/error_report.md")).unwrap();
    assert!(report.contains("billing.log, line 900"), "{report}");
    assert!(report.contains("worker.log, line 900"), "{report}");
    let saved = files(dir.path(), ".task_outputs/tool-results");
    assert_eq!(saved.len(), 2, "{saved:?}");
    // A saved result is the whole read (which read_file itself cuts at
    // 50,000 characters), not the 2,000-character preview left in context.
    for path in &saved {
        let result = std::fs::read_to_string(path).unwrap();
        assert!(result.chars().count() > 50_000, "{}", path.display());
        assert!(result.contains(" line 0001: INFO"), "{}", path.display());
    }
    let transcripts = files(dir.path(), ".transcripts");
    assert_eq!(transcripts.len(), 1);
    // The transcript named in the notice holds the history the summary
    // replaced: it starts with the prompt and ends with the compact call's
    // result.
    let name = transcripts[0].file_name().unwrap().to_string_lossy();
    assert!(stderr.contains(&format!(".transcripts/{name}")), "{stderr}");
    let lines: Vec<Message> = std::fs::read_to_string(&transcripts[0])
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    validate(&lines).unwrap();
    assert!(lines[0].text().starts_with(PROMPT));
    let ContentBlock::ToolResult(last) = &lines.last().unwrap().content[0] else {
        panic!("the transcript ends with the compact call's result");
    };
    assert!(last.text().starts_with("Compaction requested"));
    let call = lines[lines.len() - 2].tool_uses().next().unwrap();
    assert_eq!(
        (call.name.as_str(), &call.id),
        ("compact", &last.tool_use_id)
    );

    // The second run finds the logs and does it all again.
    let output = support::run_binary(dir.path(), &["-p", PROMPT], &[], "").await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        tool_output(&stdout).contains(&"demo_logs/ already exists; using it as it is."),
        "{stdout}"
    );
    assert_eq!(errors_shown(&stdout), ERROR_LINES, "{stdout}");
    assert!(stderr.contains("[compact] auto compact"), "{stderr}");
    // The same calls' results are saved under the same names; the new
    // summary has a transcript of its own.
    assert_eq!(files(dir.path(), ".task_outputs/tool-results"), saved);
    assert_eq!(files(dir.path(), ".transcripts").len(), 2);
}

#[tokio::test]
async fn the_demo_script_really_asks_for_the_summary_and_continues_from_it() {
    // The same script in-process, where the requests can be read back.
    let dir = tempfile::tempdir().unwrap();
    let script = Script::from_json(lesson::LESSON.demo_script).unwrap();
    let summary_text = script.side_replies[0].reply.text.clone().unwrap();
    let model = Arc::new(ScriptedModel::demo(script));
    let mut agent = support::agent_with(dir.path(), model.clone(), support::options());
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, PROMPT).await;

    let outcome = outcome.unwrap();
    assert!(outcome.final_text.starts_with("Found two errors"));
    assert_eq!(model.remaining(), 0);
    // One summary request, with the summariser's prompt and the whole
    // conversation: the report written, the compact call made.
    let side = model.side_requests();
    assert_eq!(side.len(), 1);
    assert_eq!(side[0]["system"][0]["text"], summary::SYSTEM_PROMPT);
    assert!(side[0].get("tools").is_none());
    let input = side[0]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(input.contains(PROMPT), "{input}");
    assert!(input.contains("error_report.md"), "{input}");
    assert!(input.contains("\"name\":\"compact\""), "{input}");
    // What the model was sent after its grep: the call, and the real
    // command's output under the same id, with exactly the two errors.
    let after_grep: Vec<Message> =
        serde_json::from_value(model.requests()[3]["messages"].clone()).unwrap();
    validate(&after_grep).unwrap();
    let grep = after_grep
        .iter()
        .flat_map(Message::tool_uses)
        .find(|call| {
            call.input["command"]
                .as_str()
                .is_some_and(|command| command.contains("grep -n ERROR"))
        })
        .expect("the grep call was sent back");
    assert_eq!(grep.name, "bash");
    let grep_result = after_grep
        .iter()
        .flat_map(|message| &message.content)
        .find_map(|block| match block {
            ContentBlock::ToolResult(result) if result.tool_use_id == grep.id => Some(result),
            _ => None,
        })
        .expect("the grep's result answers it");
    assert!(!grep_result.is_error);
    let found: Vec<String> = grep_result
        .text()
        .lines()
        .filter(|line| line.contains(": ERROR"))
        .map(str::to_string)
        .collect();
    assert_eq!(found, ERROR_LINES, "{}", grep_result.text());
    // The last request carried the summary alone, in place of the history.
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    let last: Vec<Message> = serde_json::from_value(requests[5]["messages"].clone()).unwrap();
    assert_eq!(last.len(), 1);
    let replaced = last[0].text();
    assert!(replaced.starts_with("[Compacted]"), "{replaced}");
    assert!(replaced.contains(&summary_text), "{replaced}");
    assert!(replaced.contains(&format!("The user's current request:\n{PROMPT}")));
    validate(&history).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0], last[0]);
    // And the layers said so, in order.
    let notices = recorder.notices_tagged("compact");
    assert!(notices[0].starts_with("tool-result budget:"), "{notices:?}");
    assert!(
        notices
            .last()
            .unwrap()
            .starts_with("auto compact (the model called compact)"),
        "{notices:?}"
    );
}

#[tokio::test]
async fn a_smaller_message_limit_from_the_environment_makes_the_demo_snip() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::run_binary(
        dir.path(),
        &["-p", PROMPT],
        &[("COMPACT_MAX_MESSAGES", "6")],
        "",
    )
    .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("[compact] snip: dropped 2 messages from the middle of the conversation"),
        "{stderr}"
    );
    assert!(stdout.contains("Found two errors"), "{stdout}");
}
