//! Layer 3, micro-compact: old tool results shrink to a placeholder.
//!
//! Once the model has read a tool result and moved on, its full text is
//! rarely needed again, yet it stays in every later request. This layer
//! keeps the most recent results whole and replaces the content of the older
//! ones with a one-line placeholder. The `tool_result` blocks themselves
//! stay where they are, with their ids, so every pair stays intact; only
//! their content gets shorter.
//!
//! Two kinds of result are never cleared: short ones (the placeholder would
//! be no shorter), and those the model has not seen yet — the results after
//! its latest reply. A round that returns more results than
//! [`CompactConfig::keep_recent_tool_results`](super::config::CompactConfig)
//! would otherwise lose some before the model ever read them.

use shared::protocol::{ContentBlock, Message, Role, ToolResultContent};

use super::budget;

/// What an old result is replaced with.
pub const PLACEHOLDER: &str = "[Earlier tool result compacted. Re-run the tool if you need it.]";

/// How every placeholder starts, so a cleared result is not cleared again.
const CLEARED_PREFIX: &str = "[Earlier tool result compacted.";

/// The placeholder for a result whose full text layer 1 saved to disk: it
/// keeps the path, so the model can still read it.
pub fn saved_placeholder(path: &str) -> String {
    format!("[Earlier tool result compacted. Full output: {path}]")
}

// ANCHOR: micro
/// Clears the content of all but the `keep_recent` most recent tool results
/// longer than `min_chars`, never touching results the model has not seen.
/// Returns how many were cleared.
pub fn micro_compact(history: &mut [Message], keep_recent: usize, min_chars: usize) -> usize {
    // Results after the model's latest reply are new to it.
    let unseen_from = history
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .map_or(0, |index| index + 1);
    let positions: Vec<(usize, usize)> = history
        .iter()
        .enumerate()
        .flat_map(|(m, message)| {
            message
                .content
                .iter()
                .enumerate()
                .filter(|(_, block)| matches!(block, ContentBlock::ToolResult(_)))
                .map(move |(b, _)| (m, b))
        })
        .collect();
    let old = positions.len().saturating_sub(keep_recent);

    let mut cleared = 0;
    for &(m, b) in &positions[..old] {
        if m >= unseen_from {
            continue;
        }
        let ContentBlock::ToolResult(result) = &mut history[m].content[b] else {
            continue;
        };
        let text = result.text();
        if text.chars().count() <= min_chars || text.starts_with(CLEARED_PREFIX) {
            continue;
        }
        let placeholder = match budget::saved_path(&text) {
            Some(path) => saved_placeholder(path),
            None => PLACEHOLDER.to_string(),
        };
        result.content = ToolResultContent::Text(placeholder);
        cleared += 1;
    }
    cleared
}
// ANCHOR_END: micro
