//! Continuing a reply that `max_tokens` cut off.
//!
//! Once the escalated limit has been hit too, the partial reply is kept and
//! the model is asked to go on from where it stopped. The partial reply
//! goes into the history as an assistant message, and that message must be
//! valid history on its own — but a reply cut by `max_tokens` usually stops
//! in the middle of something:
//!
//! * a `tool_use` whose input JSON was cut in half (the client hands it over
//!   as `{}`). Kept, it would need a `tool_result`, and running it with a
//!   broken input would be wrong;
//! * a thinking block without its signature, which the API refuses when it
//!   is sent back.
//!
//! So only the text survives. Every `tool_use` of the partial reply is
//! dropped — the complete ones before the cut too, since one of a round's
//! calls cannot be answered without the others — and the continuation
//! prompt names them, so the model knows they did not run and calls them
//! again (in smaller pieces). If no text is left, no assistant message is
//! added at all and the prompt joins the user message the request ended
//! with. Either way the history stays valid: no unanswered `tool_use`, no
//! empty message, roles alternating.

use shared::history::push_user;
use shared::protocol::{ContentBlock, Message, Role};

// ANCHOR: continuation
/// What the model is told after its reply was cut off.
pub const CONTINUATION_PROMPT: &str = "Your last reply hit the output token limit and was cut \
off. Carry on exactly where it stopped: no apology, no summary of what you already wrote.";

/// Appends what can be kept of a cut-off reply, then the continuation
/// prompt. Returns the names of the dropped tool calls.
pub fn append_continuation(history: &mut Vec<Message>, partial: Vec<ContentBlock>) -> Vec<String> {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for block in partial {
        match block {
            ContentBlock::Text { ref text, .. } if !text.trim().is_empty() => kept.push(block),
            ContentBlock::ToolUse(call) => dropped.push(call.name),
            _ => {}
        }
    }
    let kept_text = !kept.is_empty();
    if kept_text {
        history.push(Message {
            role: Role::Assistant,
            content: kept,
        });
    }
    push_user(
        history,
        vec![ContentBlock::text(continuation_prompt(&dropped, kept_text))],
    );
    dropped
}

/// The prompt, plus a sentence about dropped calls or a reply with no text.
pub fn continuation_prompt(dropped: &[String], kept_text: bool) -> String {
    let mut prompt = CONTINUATION_PROMPT.to_string();
    if !dropped.is_empty() {
        let names: Vec<String> = dropped.iter().map(|name| format!("`{name}`")).collect();
        prompt.push_str(&format!(
            " The tool calls in the cut-off reply ({}) were dropped and did not run; if you \
             still need them, call them again, splitting large inputs into smaller parts.",
            names.join(", ")
        ));
    }
    if !kept_text {
        prompt.push_str(" None of the cut-off reply's text was kept.");
    }
    prompt
}
// ANCHOR_END: continuation
