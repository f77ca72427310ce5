//! Each cheap compaction layer on its own, on histories built by hand: the
//! token estimate, layer 1 (the tool-result budget, which moves the largest
//! new results to disk), layer 2 (snip, which drops the middle of a long
//! history between whole rounds) and layer 3 (micro-compact, which clears
//! old results but keeps their blocks), each also as the pipeline runs it,
//! in batches that leave the history to grow only at its end in between.
//! No model and no agent: these are plain functions over a history.

use lesson::compact::budget::{self, saved_path};
use lesson::compact::estimate::{chars, estimate_tokens};
use lesson::compact::micro::{self, PLACEHOLDER};
use lesson::compact::snip::{self, NOTE};
use lesson::compact::{self, CompactConfig, files};
use serde_json::json;
use shared::history::validate;
use shared::protocol::{ContentBlock, Message, Role, ToolResult, ToolUse};

/// A `read_file` call with this id.
fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse {
        id: id.into(),
        name: "read_file".into(),
        input: json!({"path": "x"}),
    })
}

/// The successful result of call `id`.
fn result(id: &str, text: &str) -> ContentBlock {
    ContentBlock::ToolResult(ToolResult::ok(id, text))
}

fn assistant(blocks: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::Assistant,
        content: blocks,
    }
}

fn user(blocks: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::User,
        content: blocks,
    }
}

/// The task, then `rounds` rounds of one call each, whose results are
/// `size` characters of the round's letter.
fn rounds(rounds: usize, size: usize) -> Vec<Message> {
    let mut history = vec![Message::user_text("the task")];
    for round in 0..rounds {
        let id = format!("toolu_{round:03}");
        let letter = char::from(b'a' + (round % 26) as u8);
        history.push(assistant(vec![ContentBlock::text("next"), call(&id)]));
        history.push(user(vec![result(&id, &letter.to_string().repeat(size))]));
    }
    history
}

/// (id, text) of every tool result, in order.
fn results(history: &[Message]) -> Vec<(String, String)> {
    history
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some((result.tool_use_id.clone(), result.text())),
            _ => None,
        })
        .collect()
}

/// The course's thresholds.
fn config() -> CompactConfig {
    CompactConfig::default()
}

// ---- estimate -------------------------------------------------------------

#[test]
fn the_estimate_is_a_quarter_of_the_characters_sent() {
    let history = rounds(30, 1000);
    let json = serde_json::to_string(&history).unwrap().len();
    // Within 1% of the request's JSON, and four characters a token.
    assert!(
        chars(&history).abs_diff(json) <= json / 100,
        "{} vs {json}",
        chars(&history)
    );
    assert_eq!(estimate_tokens(&history), chars(&history).div_ceil(4));
}

// ---- layer 1: tool-result budget ------------------------------------------

#[test]
fn under_the_budget_nothing_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let mut history = vec![
        Message::user_text("go"),
        assistant(vec![call("a"), call("b")]),
        user(vec![
            result("a", &"x".repeat(100_000)),
            result("b", &"y".repeat(100_000)),
        ]),
    ];
    let before = history.clone();
    let report = budget::apply(&mut history, dir.path(), &config());
    assert_eq!(history, before);
    assert!(report.saved.is_empty());
    assert!(!dir.path().join(".task_outputs").exists());
}

#[test]
fn over_the_budget_the_largest_results_go_to_disk_until_it_fits() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [60_000, 90_000, 10_000, 80_000, 70_000]; // 310,000 in all
    let ids = ["t0", "t1", "t2", "t3", "t4"];
    let texts: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(i, size)| format!("result {i}: ") + &"é".repeat(*size))
        .collect();
    let mut history = vec![
        Message::user_text("go"),
        assistant(ids.iter().map(|id| call(id)).collect()),
        user(
            ids.iter()
                .zip(&texts)
                .map(|(id, text)| result(id, text))
                .collect::<Vec<_>>()
                .into_iter()
                .chain([ContentBlock::text("a note after the results")])
                .collect(),
        ),
    ];

    let report = budget::apply(&mut history, dir.path(), &config());

    validate(&history).unwrap();
    // The two largest (90,000 then 80,000) bring it under 200,000.
    assert_eq!(
        report.saved,
        [
            ".task_outputs/tool-results/t1.txt",
            ".task_outputs/tool-results/t3.txt"
        ]
    );
    assert!(report.chars_before > 310_000 && report.chars_after <= 200_000);
    let after = results(&history);
    for (i, (id, text)) in after.iter().enumerate() {
        assert_eq!(id, ids[i], "the blocks stay in place, with their ids");
        if i == 1 || i == 3 {
            let path = saved_path(text).unwrap();
            assert_eq!(path, format!(".task_outputs/tool-results/{id}.txt"));
            // The file holds the whole result; the marker its first 2,000
            // characters.
            let saved = std::fs::read_to_string(dir.path().join(path)).unwrap();
            assert_eq!(saved, texts[i]);
            let preview: String = texts[i].chars().take(2_000).collect();
            assert!(text.contains(&format!("\n{preview}\n")));
            assert!(!text.contains(&texts[i].chars().take(2_001).collect::<String>()));
            assert!(text.contains(&format!("was {} characters", texts[i].chars().count())));
        } else {
            assert_eq!(text, &texts[i]);
        }
    }
    assert_eq!(history[2].content.len(), 6, "the trailing note is kept");
    // Written atomically: no temporary file is left beside the results.
    let names: Vec<String> = std::fs::read_dir(dir.path().join(files::TOOL_RESULTS_DIR))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn only_the_newest_message_is_budgeted_and_hostile_ids_stay_inside() {
    let dir = tempfile::tempdir().unwrap();
    let big = "z".repeat(250_000);
    let mut history = vec![
        Message::user_text("go"),
        assistant(vec![call("old")]),
        user(vec![result("old", &big)]),
        assistant(vec![call("../../escape")]),
        user(vec![result("../../escape", &big)]),
    ];
    let report = budget::apply(&mut history, dir.path(), &config());
    validate(&history).unwrap();
    assert_eq!(report.saved.len(), 1);
    let saved = &report.saved[0];
    assert!(
        saved.starts_with(".task_outputs/tool-results/______escape-"),
        "{saved}"
    );
    assert!(dir.path().join(saved).is_file());
    assert_eq!(
        results(&history)[0].1,
        big,
        "older messages are not touched"
    );
}

#[test]
fn a_result_that_cannot_be_saved_stays_in_context() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: every save fails.
    std::fs::write(dir.path().join(".task_outputs"), "in the way").unwrap();
    let big = "q".repeat(250_000);
    let mut history = vec![
        Message::user_text("go"),
        assistant(vec![call("a")]),
        user(vec![result("a", &big)]),
    ];
    let report = budget::apply(&mut history, dir.path(), &config());
    assert_eq!(report.failed, 1);
    assert!(report.saved.is_empty());
    assert_eq!(results(&history)[0].1, big);
}

// ---- layer 2: snip ------------------------------------------------------------

#[test]
fn at_or_under_the_limit_snip_does_nothing() {
    let mut history = rounds(24, 10); // 49 messages
    let before = history.clone();
    assert_eq!(snip::snip(&mut history, 50, 3), 0);
    assert_eq!(history, before);
}

#[test]
fn past_the_limit_the_middle_goes_between_whole_rounds() {
    let original = rounds(40, 10); // 81 messages
    let mut history = original.clone();

    let dropped = snip::snip(&mut history, 50, 3);

    validate(&history).unwrap();
    assert!(history.len() <= 50, "{}", history.len());
    assert_eq!(dropped, original.len() - history.len());
    // The head: the task and the first round, unchanged but for the note.
    assert_eq!(history[0], original[0]);
    assert_eq!(history[1], original[1]);
    assert_eq!(history[2].content[0], original[2].content[0]);
    assert_eq!(history[2].content.last(), Some(&ContentBlock::text(NOTE)));
    // The tail: the newest messages, unchanged, starting with a round.
    assert_eq!(history[3].role, Role::Assistant);
    let tail = history.len() - 3;
    assert_eq!(history[3..], original[original.len() - tail..]);
}

/// The notes a history holds.
fn notes(history: &[Message]) -> usize {
    history
        .iter()
        .flat_map(|message| &message.content)
        .filter(|block| matches!(block, ContentBlock::Text { text, .. } if text == NOTE))
        .count()
}

#[test]
fn repeated_snips_keep_one_note_and_never_change_the_head() {
    let mut history = rounds(30, 10);
    let first = snip::snip(&mut history, 50, 3);
    let head = history[..3].to_vec();
    // Two more rounds arrive, then the next call snips again.
    for round in 100..102 {
        let id = format!("toolu_{round}");
        history.push(assistant(vec![call(&id)]));
        history.push(user(vec![result(&id, "ok")]));
    }
    let second = snip::snip(&mut history, 50, 3);
    validate(&history).unwrap();
    assert!(first > 0 && second > 0);
    assert_eq!(notes(&history), 1);
    assert_eq!(
        history[..3],
        head,
        "the head, note included, is the same bytes"
    );
}

/// Appends one round whose result is `size` characters, as the loop does.
fn push_round(history: &mut Vec<Message>, round: usize, size: usize) {
    let id = format!("toolu_{round:03}");
    history.push(assistant(vec![ContentBlock::text("next"), call(&id)]));
    history.push(user(vec![result(&id, &"r".repeat(size))]));
}

#[test]
fn snip_waits_for_the_high_mark_then_cuts_to_the_low_one_and_the_history_only_grows_between() {
    let config = config();
    let mut history = rounds(1, 10);
    let mut snips = Vec::new();
    for round in 1..80 {
        let before = history.clone();
        push_round(&mut history, round, 10);
        let (dropped, cleared) = compact::batch(&mut history, &config);
        validate(&history).unwrap();
        assert_eq!(cleared, 0, "results of 10 characters are never cleared");
        if dropped == 0 {
            assert!(history.len() <= 50);
            assert!(
                history.starts_with(&before),
                "round {round}: between snips the history only grows"
            );
        } else {
            snips.push(round);
            assert_eq!(before.len(), 49, "round {round}: snipped early");
            assert!(history.len() <= 25, "round {round}: {}", history.len());
        }
    }
    // From 3 messages, the 24th round makes 51; from the 25 a snip leaves,
    // 13 rounds do.
    assert_eq!(snips, [24, 37, 50, 63, 76]);
    assert_eq!(notes(&history), 1);
}

#[test]
fn micro_waits_for_a_batch_then_clears_every_old_result_at_once() {
    // No snip here: only layer 3.
    let config = CompactConfig {
        max_messages: 1_000,
        snip_to_messages: 1_000,
        ..config()
    };
    let mut history = rounds(1, 4_000);
    let mut batches = Vec::new();
    for round in 1..40 {
        let before = history.clone();
        push_round(&mut history, round, 4_000);
        let (_, cleared) = compact::batch(&mut history, &config);
        validate(&history).unwrap();
        let full = results(&history)
            .iter()
            .filter(|(_, text)| text.len() == 4_000)
            .count();
        if cleared == 0 {
            assert!(
                history.starts_with(&before),
                "round {round}: between batches the history only grows"
            );
        } else {
            batches.push((round, cleared));
            assert_eq!(full, 3, "round {round}: down to the three newest");
        }
        // Never more than the three newest and 16,000 characters besides.
        assert!(full <= 3 + 4, "round {round}: {full}");
    }
    // Five old results of 4,000 characters are the first batch over 16,000
    // (the newest result is unseen, and three are kept).
    assert_eq!(batches[0], (7, 5), "{batches:?}");
    assert!(
        batches.iter().all(|&(_, cleared)| cleared == 5),
        "{batches:?}"
    );
    assert_eq!(batches.len(), 7);
    // A placeholder, once written, never changes.
    let placeholders = results(&history)
        .into_iter()
        .filter(|(_, text)| text == PLACEHOLDER)
        .count();
    assert_eq!(placeholders, 5 * batches.len());
}

#[test]
fn when_one_layer_is_due_both_do_all_they_can() {
    let config = config();
    // 45 messages, under the limit, but 19 old results of 1,000 characters,
    // over the batch: the snip comes along.
    let mut history = rounds(22, 1_000);
    let (dropped, cleared) = compact::batch(&mut history, &config);
    validate(&history).unwrap();
    assert!(dropped > 0 && history.len() <= 25, "{}", history.len());
    assert_eq!(cleared, results(&history).len() - 3);
    // 51 messages of short results: the snip is due, micro-compact clears
    // the one long old result although it is far under a batch.
    let mut history = rounds(25, 10);
    let id = "toolu_long";
    history.push(assistant(vec![call(id)]));
    history.push(user(vec![result(id, &"l".repeat(500))]));
    for round in 200..203 {
        push_round(&mut history, round, 10);
    }
    let (dropped, cleared) = compact::batch(&mut history, &config);
    assert!(dropped > 0);
    assert_eq!(cleared, 1);
    // With the low mark at the high one and no batch, it is the course's
    // pipeline: snip to the limit, then micro-compact, before every call.
    let course = CompactConfig {
        snip_to_messages: 80,
        micro_batch_chars: 0,
        ..config
    };
    let mut history = rounds(40, 500);
    let mut plain = history.clone();
    compact::batch(&mut history, &course);
    snip::snip(&mut plain, 50, 3);
    micro::micro_compact(&mut plain, 3, 120);
    assert_eq!(history, plain);
}

#[test]
fn a_tiny_limit_still_keeps_the_task_and_the_newest_round() {
    let original = rounds(10, 10);
    let mut history = original.clone();
    snip::snip(&mut history, 1, 1);
    validate(&history).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(history[0].content[0], original[0].content[0]);
    assert_eq!(history[1..], original[original.len() - 2..]);
}

// ---- layer 3: micro-compact ------------------------------------------------

#[test]
fn all_but_the_three_newest_results_are_cleared_and_the_blocks_stay() {
    let original = rounds(6, 500);
    let mut history = original.clone();

    let cleared = micro::micro_compact(&mut history, 3, 120);

    validate(&history).unwrap();
    assert_eq!(cleared, 3);
    let after = results(&history);
    let before = results(&original);
    assert_eq!(after.len(), 6);
    for (i, ((id, text), (old_id, old_text))) in after.iter().zip(&before).enumerate() {
        assert_eq!(id, old_id);
        if i < 3 {
            assert_eq!(text, PLACEHOLDER);
        } else {
            assert_eq!(text, old_text);
        }
    }
    // Running it again changes nothing.
    let again = history.clone();
    assert_eq!(micro::micro_compact(&mut history, 3, 120), 0);
    assert_eq!(history, again);
}

#[test]
fn short_results_and_unseen_results_are_never_cleared() {
    let mut history = rounds(2, 100); // two short results
    // A round of five long results the model has not read yet.
    let ids: Vec<String> = (0..5).map(|i| format!("new{i}")).collect();
    history.push(assistant(ids.iter().map(|id| call(id)).collect()));
    history.push(user(
        ids.iter()
            .map(|id| result(id, &"n".repeat(5_000)))
            .collect(),
    ));
    let mut error = ToolResult::error("old_error", "e".repeat(5_000));
    error.is_error = true;
    history.insert(1, assistant(vec![call("old_error")]));
    history.insert(2, user(vec![ContentBlock::ToolResult(error)]));
    history.insert(3, assistant(vec![ContentBlock::text("carry on")]));
    history.insert(4, Message::user_text("more"));
    validate(&history).unwrap();

    let cleared = micro::micro_compact(&mut history, 3, 120);

    validate(&history).unwrap();
    assert_eq!(cleared, 1, "only the old long error result");
    let ContentBlock::ToolResult(old) = &history[2].content[0] else {
        panic!("the block stays a tool_result");
    };
    assert_eq!(old.text(), PLACEHOLDER);
    assert!(old.is_error, "an error stays an error");
    let unseen = results(&history[history.len() - 1..]);
    assert!(unseen.iter().all(|(_, text)| text.len() == 5_000));
}

#[test]
fn a_result_saved_by_the_budget_keeps_its_path_when_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let mut history = vec![
        Message::user_text("go"),
        assistant(vec![call("big")]),
        user(vec![result("big", &"b".repeat(300_000))]),
    ];
    budget::apply(&mut history, dir.path(), &config());
    for round in 0..3 {
        let id = format!("later{round}");
        history.push(assistant(vec![call(&id)]));
        history.push(user(vec![result(&id, "fine")]));
    }
    micro::micro_compact(&mut history, 3, 120);
    assert_eq!(
        results(&history)[0].1,
        micro::saved_placeholder(".task_outputs/tool-results/big.txt")
    );
}
