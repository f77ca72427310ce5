//! What a long session costs in input tokens, lesson by lesson, under the
//! provider's documented prompt-caching rules.
//!
//! Run with:
//!
//! ```sh
//! cargo bench -p xtask --bench prompt_cache
//! ```
//!
//! Each lesson from 8 on (where compaction arrives) plays the same session,
//! `shared::testing::session`: 100 turns, each reading a 4 KB file, against
//! a local fake server reached through the real Anthropic client. Each
//! plays it twice: as the lesson is now, and as the course behaved before
//! compaction was batched (snip down to the limit and micro-compact before
//! every call, breakpoints on the tools and the system prompt only). The
//! recorded request bodies are billed by `shared::testing::cache_sim`.
//! docs/src/benchmarks.md explains the columns; nothing here asserts (the
//! lessons' test, `tests/it/prompt_cache.rs`, does).
//!
//! It lives in `xtask`, the project's tooling, because it needs every lesson
//! from 8 on as a library; a lesson crate depends on `shared` alone, so that
//! it can be copied out of the course.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use shared::testing::cache_sim::{
    Billing, CacheRules, perfect_cost, strip_markers, strip_message_markers,
};
use shared::testing::session::{self, ReadingSession};

fn skills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills")
}

/// Plays the session with one lesson's agent, its compaction settings
/// changed by `$compact`; returns the request bodies.
macro_rules! play {
    ($lesson:ident, $session:expr, $compact:expr) => {{
        let dir = tempfile::tempdir().unwrap();
        session::write_files(dir.path(), $session).unwrap();
        let mut compact = $lesson::compact::CompactConfig::default();
        $compact(
            &mut compact.snip_to_messages,
            &mut compact.micro_batch_chars,
        );
        // Set field by field: the lessons' `Options` differ in what else
        // they hold.
        let mut options = $lesson::Options::default();
        options.approver = Box::new($lesson::permission::ApproveAll);
        options.skills = $lesson::SkillsArgs {
            skills_dir: Some(skills()),
        };
        options.compact = compact;
        session::run($session, dir.path(), |setup| $lesson::build(setup, options))
            .await
            .unwrap()
            .bodies
    }};
}

/// As the lesson is now.
fn now(_: &mut usize, _: &mut usize) {}

/// Compaction as the course did it: a little before every call.
fn course(snip_to: &mut usize, batch: &mut usize) {
    *snip_to = usize::MAX;
    *batch = 0;
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let session = ReadingSession::default();
    let rules = CacheRules::default();
    println!(
        "prompt-cache benchmark: {} turns, each reading a {}-byte file; tokens = JSON bytes / 4\n",
        session.turns, session.file_bytes
    );
    let lessons = runtime.block_on(async {
        [
            (
                "s08",
                play!(s08_context_compact, &session, now),
                play!(s08_context_compact, &session, course),
            ),
            (
                "s09",
                play!(s09_memory, &session, now),
                play!(s09_memory, &session, course),
            ),
            (
                "s10",
                play!(s10_system_prompt, &session, now),
                play!(s10_system_prompt, &session, course),
            ),
            (
                "s11",
                play!(s11_error_recovery, &session, now),
                play!(s11_error_recovery, &session, course),
            ),
            (
                "s12",
                play!(s12_task_system, &session, now),
                play!(s12_task_system, &session, course),
            ),
            (
                "s13",
                play!(s13_background_tasks, &session, now),
                play!(s13_background_tasks, &session, course),
            ),
            (
                "s14",
                play!(s14_cron_scheduler, &session, now),
                play!(s14_cron_scheduler, &session, course),
            ),
            (
                "s15",
                play!(s15_agent_teams, &session, now),
                play!(s15_agent_teams, &session, course),
            ),
            (
                "s16",
                play!(s16_autonomous_agents, &session, now),
                play!(s16_autonomous_agents, &session, course),
            ),
            (
                "s17",
                play!(s17_worktree_isolation, &session, now),
                play!(s17_worktree_isolation, &session, course),
            ),
        ]
    });

    println!(
        "| lesson | requests | input tokens | read | written | uncached | billed | billed ÷ input | before: input | before: billed | billed ÷ before |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (lesson, bodies, old_bodies) in &lessons {
        let sent = session::bill(bodies, &session, |_| {}).unwrap();
        let before = session::bill(old_bodies, &session, strip_message_markers).unwrap();
        let figures = &sent.conversation;
        println!(
            "| {lesson} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {} | {:.2} |",
            sent.conversation_requests,
            n(figures.total),
            n(figures.read),
            n(figures.written),
            n(figures.uncached),
            n(billed(figures, &rules)),
            ratio(figures, &rules),
            n(before.conversation.total),
            n(billed(&before.conversation, &rules)),
            figures.billed(&rules) / before.conversation.billed(&rules),
        );
        if sent.side_requests > 0 {
            println!(
                "| {lesson}: side queries | {} | {} | | | | {} | | | | |",
                sent.side_requests,
                n(sent.side.total),
                n(billed(&sent.side, &rules)),
            );
        }
    }

    // Which of the two changes pays, for the newest lesson.
    let (_, bodies, old_bodies) = lessons.last().unwrap();
    let conversation: Vec<Value> = bodies
        .iter()
        .filter(|body| session::offers_tools(body))
        .cloned()
        .collect();
    println!(
        "\n| {}, {} turns | input tokens | read | written | billed | billed ÷ input |",
        lessons.last().map_or("", |lesson| lesson.0),
        session.turns
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let variants: [(&str, &Vec<Value>, Adjust); 6] = [
        (
            "compaction every call, no markers",
            old_bodies,
            strip_markers,
        ),
        (
            "compaction every call, tools and system marked (before)",
            old_bodies,
            strip_message_markers,
        ),
        (
            "compaction every call, conversation marked too",
            old_bodies,
            |_| {},
        ),
        ("batched compaction, no markers", bodies, strip_markers),
        (
            "batched compaction, tools and system marked",
            bodies,
            strip_message_markers,
        ),
        (
            "batched compaction, conversation marked too (now)",
            bodies,
            |_| {},
        ),
    ];
    for (name, bodies, adjust) in variants {
        let figures = session::bill(bodies, &session, adjust)
            .unwrap()
            .conversation;
        println!(
            "| {name} | {} | {} | {} | {} | {:.2} |",
            n(figures.total),
            n(figures.read),
            n(figures.written),
            n(billed(&figures, &rules)),
            ratio(&figures, &rules),
        );
    }
    let total = session::bill(bodies, &session, |_| {})
        .unwrap()
        .conversation
        .total;
    let perfect = perfect_cost(&rules, &conversation, total);
    println!(
        "| a perfect cache for the batched requests | {} | | | {} | {:.2} |",
        n(total),
        n(perfect.round() as u64),
        perfect / total as f64
    );
}

/// How a body is changed before it is billed.
type Adjust = fn(&mut Value);

fn billed(figures: &Billing, rules: &CacheRules) -> u64 {
    figures.billed(rules).round() as u64
}

fn ratio(figures: &Billing, rules: &CacheRules) -> f64 {
    figures.billed(rules) / figures.total as f64
}

/// `1234567` as `1,234,567`.
fn n(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
