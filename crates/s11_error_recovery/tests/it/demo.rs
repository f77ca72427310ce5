//! Lesson 11's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness. The script stages a 429,
//! three 529s, a stream cut short, a reply cut at `max_tokens` twice and a
//! prompt that is too long; the waits, the tools, the escalation, the
//! continuation and the compaction are real. The binary runs twice in the
//! same directory (with a 1 ms base delay, so the backoff path is taken
//! without its seconds), once more with a fallback model in an empty
//! `--workdir`, and the script runs once in-process on paused time to
//! check what every request sent.

use std::path::Path;
use std::sync::Arc;

use lesson::recovery::truncation::CONTINUATION_PROMPT;
use lesson::recovery::{RecoveryEvent, RecoveryPolicy};
use serde_json::Value;
use shared::history::validate;
use shared::model::scripted::{Script, ScriptedModel};
use shared::protocol::{ContentBlock, Message};

use crate::support;

/// The chapter's prompt.
const PROMPT: &str = "write a guide to error recovery into GUIDE.md";

/// The script's answer to the summary side query.
const SUMMARY: &str = "The user asked for a guide to error recovery in GUIDE.md.";

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

fn script() -> Script {
    Script::from_json(lesson::LESSON.demo_script).unwrap()
}

/// The contents of the script's `write_file` calls, in order: the outline,
/// the unfinished call that is cut off, the whole guide.
fn script_writes() -> Vec<String> {
    script()
        .replies
        .iter()
        .flat_map(|reply| &reply.tool_calls)
        .filter(|call| call.name == "write_file")
        .map(|call| call.input["content"].as_str().unwrap().to_string())
        .collect()
}

/// The guide as the script's last `write_file` call writes it.
fn whole_guide() -> String {
    script_writes().pop().unwrap()
}

/// What `write_file` answers for writing `content` to GUIDE.md.
fn wrote(content: &str) -> String {
    format!("Wrote {} bytes to GUIDE.md", content.len())
}

/// The transcripts compaction saved in `dir`, each parsed back into the
/// history it was made from.
fn transcripts(dir: &Path) -> Vec<Vec<Message>> {
    std::fs::read_dir(dir.join(".transcripts"))
        .unwrap()
        .map(|entry| {
            let lines = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            lines
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        })
        .collect()
}

/// Checks a transcript: the history as the refused request sent it.
fn assert_transcript(history: &[Message]) {
    validate(history).unwrap();
    let texts: Vec<String> = history.iter().map(Message::text).collect();
    assert_eq!(history.len(), 7, "{texts:#?}");
    assert_eq!(texts[0], PROMPT);
    // The reply cut at 8000 was dropped by the escalation: it is nowhere.
    assert!(
        !texts
            .iter()
            .any(|text| text.contains("this reply pretends to hit max_tokens 8000")),
        "{texts:#?}"
    );
    // The reply cut at 64000 kept its text, not its unfinished call.
    assert!(
        texts[3].starts_with("[demo model: this one pretends to hit even 64000"),
        "{}",
        texts[3]
    );
    assert_eq!(history[3].tool_uses().count(), 0);
    assert!(texts[4].starts_with(CONTINUATION_PROMPT), "{}", texts[4]);
    assert!(
        texts[4].contains("(`write_file`) were dropped and did not run"),
        "{}",
        texts[4]
    );
    // The calls that ran: the outline, then the whole guide in one piece;
    // each answered, in the next message and under its id, by what the
    // real write reported for its contents.
    let writes = script_writes();
    for ((call, answer), content) in [(&history[1], &history[2]), (&history[5], &history[6])]
        .into_iter()
        .zip([&writes[0], &writes[2]])
    {
        let calls: Vec<_> = call.tool_uses().collect();
        assert_eq!(calls.len(), 1, "{call:?}");
        assert_eq!(calls[0].name, "write_file");
        assert_eq!(calls[0].input["content"].as_str(), Some(content.as_str()));
        let ContentBlock::ToolResult(result) = &answer.content[0] else {
            panic!("{answer:?}");
        };
        assert_eq!(result.tool_use_id, calls[0].id);
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.text(), wrote(content));
    }
    assert_eq!(history.iter().flat_map(Message::tool_uses).count(), 2);
}

#[tokio::test]
async fn the_demo_walks_through_every_recovery_path_and_runs_again_in_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    for run in 1..=2 {
        let output = support::run_binary(
            dir.path(),
            &["-p", PROMPT],
            &[("RECOVERY_BASE_DELAY_MS", "1")],
            "",
        )
        .await;

        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert!(
            output.status.success(),
            "run {run}\nstdout: {stdout}\nstderr: {stderr}"
        );
        assert!(stderr.contains("[demo model]"), "{stderr}");
        // Each path announces itself, in the order the demo reaches it; the
        // system prompt is assembled once, not once per attempt. (The binary
        // seeds its jitter from the clock, so the waits are not asserted.)
        assert_in_order(
            &stderr,
            &[
                "[prompt] assembled from sections: identity, workspace, tools, planning, skills\n",
                "[recovery] 429 rate limited — attempt 2/10 in ",
                "[recovery] 529 overloaded — attempt 3/10 in ",
                "[recovery] 529 overloaded — attempt 4/10 in ",
                "[recovery] 3 overloaded replies in a row — no FALLBACK_MODEL_ID is set, so \
                 staying on demo\n",
                "[recovery] 529 overloaded — attempt 5/10 in ",
                "[hook] PreToolUse: write_file(GUIDE.md)\n",
                "[prompt] cache hit: system prompt unchanged\n",
                "[recovery] stream cut short — attempt 2/10 in ",
                "[recovery] reply cut off at max_tokens 8000 — sending the same request again \
                 with max_tokens 64000",
                "[recovery] reply cut off again — keeping it and asking the model to continue \
                 (1/3); dropped the unfinished tool calls: write_file\n",
                "[hook] PreToolUse: write_file(GUIDE.md)\n",
                "[prompt] cache hit: system prompt unchanged\n",
                "[recovery] prompt too long — compacting the history (lesson 8), then sending \
                 it once more\n",
                "[compact] reactive compact: transcript saved to .transcripts/",
            ],
        );
        assert_eq!(stderr.matches("[recovery]").count(), 9, "{stderr}");
        assert_eq!(stderr.matches("[prompt] assembled").count(), 1, "{stderr}");
        assert_eq!(stderr.matches("[prompt] cache hit").count(), 2, "{stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
        // Two writes really ran, the outline and the whole guide, as their
        // results on the terminal say; the unfinished call never did.
        let writes = script_writes();
        let calls: Vec<&str> = stdout
            .lines()
            .filter(|line| line.starts_with("> write_file"))
            .collect();
        assert_eq!(calls, ["> write_file: GUIDE.md"; 2], "{stdout}");
        let results: Vec<&str> = stdout
            .lines()
            .filter_map(|line| line.strip_prefix("  "))
            .filter(|line| line.starts_with("Wrote "))
            .collect();
        assert_eq!(results, [wrote(&writes[0]), wrote(&writes[2])], "{stdout}");
        // Side queries never reach the terminal: not the summary, not the
        // extraction's empty answer.
        assert!(!stdout.contains(SUMMARY), "{stdout}");
        assert!(!stdout.contains("[]"), "{stdout}");

        // The real file: the whole guide, not the dropped unfinished call.
        let guide = std::fs::read_to_string(dir.path().join("GUIDE.md")).unwrap();
        assert_eq!(guide, whole_guide());
        // One transcript per run, each the valid history the refused
        // request sent.
        let transcripts = transcripts(dir.path());
        assert_eq!(transcripts.len(), run);
        for transcript in &transcripts {
            assert_transcript(transcript);
        }
        // The extraction found nothing worth keeping.
        assert!(!dir.path().join(".memory").exists());
    }
}

#[tokio::test]
async fn with_a_fallback_model_the_third_overload_switches_and_the_workdir_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();
    // `--workdir` names another directory than the one the binary runs in.
    let mut command = support::binary(workdir.path());
    command
        .current_dir(dir.path())
        .args(["-p", PROMPT])
        .env("RECOVERY_BASE_DELAY_MS", "1")
        .env("FALLBACK_MODEL_ID", "claude-haiku-4-5");
    let mut child = command.spawn().unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().await.unwrap();

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "[recovery] 3 overloaded replies in a row — switching from demo to \
             claude-haiku-4-5 for the rest of this turn\n"
        ),
        "{stderr}"
    );
    // The switch sends at once: no fifth attempt, no "no fallback" note.
    assert!(!stderr.contains("attempt 5/10"), "{stderr}");
    assert!(!stderr.contains("no FALLBACK_MODEL_ID"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(workdir.path().join("GUIDE.md")).unwrap(),
        whole_guide()
    );
    assert_eq!(transcripts(workdir.path()).len(), 1);
    assert!(!dir.path().join("GUIDE.md").exists());
    assert!(!dir.path().join(".transcripts").exists());
}

/// What a recovery event says, without the jittered delay.
fn kind(event: &RecoveryEvent) -> String {
    match event {
        RecoveryEvent::Retry {
            failure,
            next_attempt,
            ..
        } => format!("retry {failure} as attempt {next_attempt}"),
        other => other.to_string(),
    }
}

// The loop asks for the system prompt once per round, and recovery sends
// every attempt of the round with it, so retries reuse the same cached
// prefix (paused time: the waits are free).
#[tokio::test(start_paused = true)]
async fn the_demo_script_sends_every_attempt_as_the_chapter_describes() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::demo(script()));
    let options = lesson::Options {
        recovery: RecoveryPolicy {
            jitter_seed: Some(42),
            ..RecoveryPolicy::default()
        },
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, PROMPT).await;

    let outcome = outcome.unwrap();
    assert!(
        outcome
            .final_text
            .starts_with("[demo model: the last request"),
        "{}",
        outcome.final_text
    );
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    // Three rounds: five attempts for the outline, four for the guide (a
    // cut stream, a reply cut at 8000, its escalation, a continuation), two
    // around a compaction.
    let requests = model.requests();
    assert_eq!(requests.len(), 11);
    let messages = |request: &Value| request["messages"].clone();
    for attempt in &requests[1..5] {
        assert_eq!(attempt, &requests[0]);
    }
    assert_eq!(requests[6], requests[5]);
    assert_eq!(messages(&requests[7]), messages(&requests[6]));
    let limits: Vec<u64> = requests
        .iter()
        .map(|request| request["max_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(
        limits,
        [
            8000, 8000, 8000, 8000, 8000, 8000, 8000, 64000, 64000, 64000, 64000
        ]
    );
    let continued: Vec<Message> = serde_json::from_value(messages(&requests[8])).unwrap();
    assert!(
        continued
            .last()
            .unwrap()
            .text()
            .starts_with(CONTINUATION_PROMPT)
    );
    assert_eq!(requests[10]["messages"].as_array().unwrap().len(), 5);
    let compacted: Vec<Message> = serde_json::from_value(messages(&requests[10])).unwrap();
    validate(&compacted).unwrap();
    assert!(compacted[0].text().starts_with("[Reactive compact]"));
    assert!(compacted[0].text().contains(SUMMARY));
    // Every attempt carried the prompt assembled for the first round.
    for request in &requests[1..] {
        assert_eq!(request["system"], requests[0]["system"]);
    }
    let stats = agent.hooks().prompt().stats();
    assert_eq!((stats.assembled, stats.hits), (1, 2));
    // The summary (answered by the script's side reply) and the
    // extraction are side queries.
    let side = model.side_requests();
    assert_eq!(side.len(), 2);
    assert_eq!(
        side[0]["system"][0]["text"],
        lesson::compact::summary::SYSTEM_PROMPT
    );
    assert!(
        side[1].to_string().contains("Read this dialogue"),
        "{}",
        side[1]
    );

    let events = agent.hooks_mut().recovery().events();
    assert_eq!(
        events.iter().map(kind).collect::<Vec<_>>(),
        [
            "retry 429 rate limited as attempt 2",
            "retry 529 overloaded as attempt 3",
            "retry 529 overloaded as attempt 4",
            "3 overloaded replies in a row — no FALLBACK_MODEL_ID is set, so staying on test",
            "retry 529 overloaded as attempt 5",
            "retry stream cut short as attempt 2",
            &RecoveryEvent::Escalated {
                from: 8000,
                to: 64000
            }
            .to_string(),
            &RecoveryEvent::Continuation {
                number: 1,
                max: 3,
                dropped_calls: vec!["write_file".into()]
            }
            .to_string(),
            &RecoveryEvent::Compacting.to_string(),
        ]
    );
    let shown: Vec<String> = events.iter().map(ToString::to_string).collect();
    assert_eq!(recorder.notices_tagged("recovery"), shown);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("GUIDE.md")).unwrap(),
        whole_guide()
    );
}
