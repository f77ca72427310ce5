//! Cache breakpoints in the conversation.
//!
//! The assembler marks the end of the tools and of the system prompt, the
//! prefix that rarely changes. In a long session the conversation is by far
//! the larger part of every request, and it is sent again each round with
//! only a little added at its end. So this module marks the conversation
//! too, on every request:
//!
//! * the last block of the last message: everything this request sends is
//!   written to the cache, so the next request, which repeats all of it and
//!   adds a round, reads it back;
//! * the last block of the user message before that, where the previous
//!   request ended: the entry that request wrote is found here even when
//!   the new round added more blocks than the provider looks back over (20).
//!
//! With the two of the assembler that is four, the most a request may
//! carry; if a lesson marks more of the prefix, the conversation gets what
//! is left.
//!
//! The markers are set on a copy of the messages as the request goes out
//! ([`ConversationBreakpoints`] wraps the model for one call), never on the
//! stored history: a marker left in the history would still be there on
//! the next request, one more each round, and the API refuses a fifth.
//! `cache_control` is not part of the bytes the cache compares, so moving
//! the markers from round to round costs nothing.

use shared::error::ApiError;
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{CacheControl, ContentBlock, Message, Request, Response, Role};

/// The most breakpoints the API accepts in one request.
pub const MAX_BREAKPOINTS: usize = 4;

// ANCHOR: mark
/// Marks up to `free` breakpoints in `messages`: the end of the last
/// message, then the end of the user message before it. Returns how many
/// were set.
pub fn mark_conversation(messages: &mut [Message], free: usize) -> usize {
    let Some(last) = messages.len().checked_sub(1) else {
        return 0;
    };
    let previous = (0..last)
        .rev()
        .find(|&index| messages[index].role == Role::User);
    let mut marked = 0;
    for index in std::iter::once(last).chain(previous) {
        if marked < free && mark_message(&mut messages[index]) {
            marked += 1;
        }
    }
    marked
}

/// Puts a breakpoint on the last block of `message` that can carry one (a
/// tool result or a non-empty text); false if there is none.
fn mark_message(message: &mut Message) -> bool {
    for block in message.content.iter_mut().rev() {
        match block {
            ContentBlock::ToolResult(result) => {
                result.cache_control = Some(CacheControl::ephemeral());
                return true;
            }
            ContentBlock::Text {
                text,
                cache_control,
            } if !text.is_empty() => {
                *cache_control = Some(CacheControl::ephemeral());
                return true;
            }
            _ => {}
        }
    }
    false
}

/// How many breakpoints the tools and the system prompt of `request`
/// already carry.
pub fn prefix_breakpoints(request: &Request<'_>) -> usize {
    let tools = request
        .tools
        .iter()
        .filter(|tool| tool.cache_control.is_some())
        .count();
    let system = request
        .system
        .iter()
        .filter(|block| block.cache_control.is_some())
        .count();
    tools + system
}
// ANCHOR_END: mark

// ANCHOR: model
/// The model of one call, sending every request with the conversation's
/// breakpoints marked on a copy of its messages. Every attempt of the call
/// is marked afresh: a retry after reactive compaction, or a continuation
/// of a cut reply, ends somewhere else.
pub struct ConversationBreakpoints<'m> {
    inner: &'m dyn Model,
}

impl<'m> ConversationBreakpoints<'m> {
    /// Wraps `inner` for one call.
    pub fn new(inner: &'m dyn Model) -> Self {
        Self { inner }
    }
}

impl Model for ConversationBreakpoints<'_> {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(async move {
            let mut messages = request.messages.to_vec();
            let free = MAX_BREAKPOINTS.saturating_sub(prefix_breakpoints(request));
            mark_conversation(&mut messages, free);
            let marked = Request {
                messages: &messages,
                ..request.clone()
            };
            self.inner.send(&marked, on_delta).await
        })
    }
}
// ANCHOR_END: model

#[cfg(test)]
mod tests {
    use super::*;
    use shared::protocol::ToolResult;

    fn marked(block: &ContentBlock) -> bool {
        match block {
            ContentBlock::Text { cache_control, .. } => cache_control.is_some(),
            ContentBlock::ToolResult(result) => result.cache_control.is_some(),
            _ => false,
        }
    }

    fn marks(messages: &[Message]) -> Vec<(usize, usize)> {
        messages
            .iter()
            .enumerate()
            .flat_map(|(m, message)| {
                message
                    .content
                    .iter()
                    .enumerate()
                    .filter(|(_, block)| marked(block))
                    .map(move |(b, _)| (m, b))
            })
            .collect()
    }

    fn round(id: &str) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse(shared::protocol::ToolUse {
                    id: id.into(),
                    name: "read_file".into(),
                    input: serde_json::json!({}),
                })],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult(ToolResult::ok(id, "text")),
                    ContentBlock::text(""),
                ],
            },
        ]
    }

    #[test]
    fn the_end_and_the_previous_end_are_marked_within_the_limit() {
        let mut messages = vec![Message::user_text("task")];
        assert_eq!(mark_conversation(&mut messages, 2), 1);
        assert_eq!(marks(&messages), [(0, 0)]);

        let mut messages = vec![Message::user_text("task")];
        messages.extend(round("a"));
        messages.extend(round("b"));
        assert_eq!(mark_conversation(&mut messages, 2), 2);
        // The tool results, not the empty text after them.
        assert_eq!(marks(&messages), [(2, 0), (4, 0)]);

        let mut messages = vec![Message::user_text("task")];
        messages.extend(round("a"));
        assert_eq!(mark_conversation(&mut messages, 1), 1);
        assert_eq!(marks(&messages), [(2, 0)], "only the end when one is free");
        assert_eq!(mark_conversation(&mut [], 2), 0);
    }
}
