//! Acceptance for prompt caching: a long session costs at most 60 % of what
//! it cost before the conversation was marked and compaction was batched.
//!
//! The session is `shared::testing::session`'s: 100 turns, each reading a
//! 4 KB file, played by a program behind a fake server and reached through
//! the real Anthropic client. The server bills each request under the
//! documented caching rules (`shared::testing::cache_sim`) and reports the
//! figures in the reply's `usage`, so the usage the agent adds up can be
//! checked as well. The same session is played a second time the way the
//! course behaved before: compaction on every call (snip to the limit,
//! micro-compact without waiting for a batch) and breakpoints on the tools
//! and the system prompt only.

use serde_json::Value;
use shared::history::validate;
use shared::protocol::{ContentBlock, Message};
use shared::testing::cache_sim::{Billing, perfect_cost, strip_markers, strip_message_markers};
use shared::testing::session::{self, ReadingSession};

use crate::support;

/// The session, its recorded bodies and the history it left.
async fn play(compact: lesson::compact::CompactConfig) -> (ReadingSession, Vec<Value>, Billing) {
    let session = ReadingSession::default();
    let dir = tempfile::tempdir().unwrap();
    session::write_files(dir.path(), &session).unwrap();
    let options = lesson::Options {
        compact,
        ..support::options()
    };
    let recorded = session::run(&session, dir.path(), |setup| lesson::build(setup, options))
        .await
        .unwrap();
    let billed = session::bill(&recorded.bodies, &session, |_| {}).unwrap();
    // The usage the agent added up over its turns is what the server
    // reported for the conversation's requests.
    let usage = &recorded.usage;
    let reported = Billing {
        total: usage.input_tokens
            + usage.cache_read_input_tokens.unwrap_or(0)
            + usage.cache_creation_input_tokens.unwrap_or(0),
        read: usage.cache_read_input_tokens.unwrap_or(0),
        written: usage.cache_creation_input_tokens.unwrap_or(0),
        uncached: usage.input_tokens,
    };
    assert_eq!(reported, billed.conversation);
    (session, recorded.bodies, billed.conversation)
}

/// The conversation's messages in a request body.
fn messages(body: &Value) -> Vec<Message> {
    serde_json::from_value(body["messages"].clone()).unwrap()
}

fn marked(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Text { cache_control, .. } => cache_control.is_some(),
        ContentBlock::ToolResult(result) => result.cache_control.is_some(),
        _ => false,
    }
}

#[tokio::test]
async fn a_long_session_costs_at_most_sixty_percent_of_the_course_behaviour() {
    let (session, bodies, now) = play(lesson::compact::CompactConfig::default()).await;
    let rules = &session.rules;
    let conversation: Vec<&Value> = bodies
        .iter()
        .filter(|body| session::offers_tools(body))
        .collect();
    assert_eq!(conversation.len(), 2 * session.turns);
    for (index, body) in conversation.iter().enumerate() {
        // Valid: the pairing rules hold (billing checks the four-marker
        // limit), and the request ends on a breakpoint, so the next one
        // reads everything this one sent.
        let messages = messages(body);
        validate(&messages).unwrap();
        let last = messages.last().unwrap();
        assert!(
            last.content.iter().any(marked),
            "request {index}: the end of the conversation is not marked"
        );
    }
    // Each request ends on a breakpoint: nothing is sent at the full price.
    assert_eq!(now.uncached, 0);

    let (_, old_bodies, _) = play(lesson::compact::CompactConfig {
        snip_to_messages: usize::MAX,
        micro_batch_chars: 0,
        ..lesson::compact::CompactConfig::default()
    })
    .await;
    let before = session::bill(&old_bodies, &session, strip_message_markers)
        .unwrap()
        .conversation;
    let unmarked = session::bill(&bodies, &session, strip_markers)
        .unwrap()
        .conversation;
    assert_eq!(
        unmarked.billed(rules),
        now.total as f64,
        "no markers: all at 1×"
    );
    println!(
        "billed {:.0} of {} tokens ({:.2}); before: {:.0} of {} ({:.2}); ratio {:.2}",
        now.billed(rules),
        now.total,
        now.billed(rules) / now.total as f64,
        before.billed(rules),
        before.total,
        before.billed(rules) / before.total as f64,
        now.billed(rules) / before.billed(rules),
    );
    assert!(
        now.billed(rules) <= 0.60 * before.billed(rules),
        "billed {:.0}, before {:.0}",
        now.billed(rules),
        before.billed(rules)
    );
    // No placement of breakpoints beats writing each distinct block once at
    // 1.25× and reading it at 0.1× ever after.
    let conversation: Vec<Value> = conversation.into_iter().cloned().collect();
    assert!(now.billed(rules) >= perfect_cost(rules, &conversation, now.total));
}
