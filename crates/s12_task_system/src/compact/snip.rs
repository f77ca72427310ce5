//! Layer 2, snip: a long history loses its middle.
//!
//! Past [`CompactConfig::max_messages`](super::config::CompactConfig)
//! messages, the oldest work after the start is dropped. What stays is the
//! head — the first messages, which hold the task — and the most recent
//! messages, which hold the work in progress.
//!
//! Where to cut is the whole difficulty. A `tool_use` and its
//! `tool_result` live in two messages (an assistant message and the user
//! message after it), and the API refuses a history that keeps one without
//! the other. The history must also start with a user message and
//! alternate. One rule gives all three: **cut only just before an assistant
//! message.** A round (assistant message, then the user message that
//! answers it) is then either kept whole or dropped whole; the head ends
//! with a user message and the tail starts with an assistant message, so the
//! roles still alternate across the gap. A short note saying how much was
//! dropped joins the last message of the head, after anything it holds, so
//! it never stands between a `tool_use` and its results.

use shared::protocol::{ContentBlock, Message, Role};

const MARKER_PREFIX: &str = "[";
const MARKER_SUFFIX: &str = " earlier messages snipped from the middle of the conversation]";

/// The note that replaces `count` dropped messages.
pub fn marker(count: usize) -> String {
    format!("{MARKER_PREFIX}{count}{MARKER_SUFFIX}")
}

/// How many messages a note says were dropped, if `text` is such a note.
pub fn marker_count(text: &str) -> Option<usize> {
    text.strip_prefix(MARKER_PREFIX)?
        .strip_suffix(MARKER_SUFFIX)?
        .parse()
        .ok()
}

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
    add_marker(&mut history[head_end - 1], dropped);
    dropped
}
// ANCHOR_END: snip

/// Adds the note to `message`, or, when an earlier snip already left one
/// there, raises its count, so repeated snips leave one note.
fn add_marker(message: &mut Message, dropped: usize) {
    for block in &mut message.content {
        if let ContentBlock::Text { text, .. } = block
            && let Some(earlier) = marker_count(text)
        {
            *text = marker(earlier + dropped);
            return;
        }
    }
    message.content.push(ContentBlock::text(marker(dropped)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip() {
        assert_eq!(marker_count(&marker(12)), Some(12));
        assert_eq!(marker_count("[12 apples]"), None);
    }
}
