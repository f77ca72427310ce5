//! Layer 2, snip: a long history loses its middle.
//!
//! Past [`CompactConfig::max_messages`](super::config::CompactConfig)
//! messages, the oldest work after the start is dropped. What stays is the
//! head — the first messages, which hold the task — and the most recent
//! messages, which hold the work in progress.
//!
//! The pipeline snips in batches ([`super::batch`]): once over the limit,
//! it cuts down to
//! [`CompactConfig::snip_to_messages`](super::config::CompactConfig), well
//! under it, so the history then grows only at its end for many rounds. A
//! snip on every call past the limit would change the history right after
//! its head on every call, and the provider's prompt cache, which reuses
//! only an unchanged start of the request, would never get past the head
//! (chapter 10).
//!
//! Where to cut is the whole difficulty. A `tool_use` and its
//! `tool_result` live in two messages (an assistant message and the user
//! message after it), and the API refuses a history that keeps one without
//! the other. The history must also start with a user message and
//! alternate. One rule gives all three: **cut only just before an assistant
//! message.** A round (assistant message, then the user message that
//! answers it) is then either kept whole or dropped whole; the head ends
//! with a user message and the tail starts with an assistant message, so the
//! roles still alternate across the gap. A short note saying that messages
//! were dropped joins the last message of the head, after anything it
//! holds, so it never stands between a `tool_use` and its results.

use shared::protocol::{ContentBlock, Message, Role};

/// The note left where messages were dropped. It is written once and never
/// changed: a later snip finds it and leaves it as it is (the count of each
/// snip goes into its notice instead), so the head stays the same bytes.
pub const NOTE: &str = "[Earlier messages were snipped from the middle of the conversation here.]";

// ANCHOR: snip
/// Drops the middle of `history` if it holds more than `max_messages`,
/// keeping at least `keep_head` messages at the start and as many recent
/// ones as fit. Returns how many messages were dropped.
///
/// The result has at most `max_messages` messages, except that the head and
/// the last round are always kept whole, even if together they are more.
pub fn snip(history: &mut Vec<Message>, max_messages: usize, keep_head: usize) -> usize {
    let len = history.len();
    if len <= max_messages {
        return 0;
    }
    let is_assistant = |index: usize| history[index].role == Role::Assistant;

    // The head: at least `keep_head` messages (never none: the first one is
    // the task), extended until the next message is an assistant's.
    let mut head_end = keep_head.clamp(1, len);
    while head_end < len && !is_assistant(head_end) {
        head_end += 1;
    }

    // The tail: the first assistant message among the last ones that fit;
    // if none fits, the last assistant message, so the newest round stays.
    let fits_from = len.saturating_sub(max_messages.saturating_sub(head_end));
    let tail_start = (fits_from..len)
        .find(|&index| is_assistant(index))
        .or_else(|| (0..fits_from).rev().find(|&index| is_assistant(index)));
    let Some(tail_start) = tail_start.filter(|&start| start > head_end) else {
        return 0;
    };
    // The note goes into the head's last message, which must be the user's
    // for the roles to alternate once the middle is gone.
    if history[head_end - 1].role != Role::User {
        return 0;
    }

    let dropped = tail_start - head_end;
    history.drain(head_end..tail_start);
    add_note(&mut history[head_end - 1]);
    dropped
}
// ANCHOR_END: snip

/// Adds the note to `message`, unless an earlier snip already left it
/// there: repeated snips leave one note, unchanged.
fn add_note(message: &mut Message) {
    let noted = message
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Text { text, .. } if text == NOTE));
    if !noted {
        message.content.push(ContentBlock::text(NOTE));
    }
}
