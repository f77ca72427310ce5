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
//!
//! The pipeline clears in batches ([`super::batch`]): it waits until the
//! results it would clear hold more than
//! [`CompactConfig::micro_batch_chars`](super::config::CompactConfig), then
//! clears all of them at once. Clearing one result a round would change the
//! history a few messages from its end on every call, and the provider's
//! prompt cache, which reuses only an unchanged start of the request, would
//! have to store the rest again each time (chapter 10). A placeholder, once
//! written, is never changed.

use shared::protocol::{ContentBlock, Message, Role, ToolResult, ToolResultContent};

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
    // ANCHOR: exercise-s08-micro
    let clearable = clearable(history, keep_recent, min_chars);
    for &(m, b) in &clearable {
        let ContentBlock::ToolResult(result) = &mut history[m].content[b] else {
            continue;
        };
        let placeholder = match budget::saved_path(&result.text()) {
            Some(path) => saved_placeholder(path),
            None => PLACEHOLDER.to_string(),
        };
        result.content = ToolResultContent::Text(placeholder);
    }
    clearable.len()
    // ANCHOR_END: exercise-s08-micro
}

/// Where the results are that [`micro_compact`] would clear, as (message,
/// block) positions: all but the `keep_recent` most recent results, minus
/// those the model has not seen, those of `min_chars` or fewer and those
/// already cleared.
fn clearable(history: &[Message], keep_recent: usize, min_chars: usize) -> Vec<(usize, usize)> {
    // Results after the model's latest reply are new to it.
    let unseen_from = history
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .map_or(0, |index| index + 1);
    let positions: Vec<(usize, usize, &ToolResult)> = history
        .iter()
        .enumerate()
        .flat_map(|(m, message)| {
            message
                .content
                .iter()
                .enumerate()
                .filter_map(move |(b, block)| match block {
                    ContentBlock::ToolResult(result) => Some((m, b, result)),
                    _ => None,
                })
        })
        .collect();
    let old = positions.len().saturating_sub(keep_recent);
    positions[..old]
        .iter()
        .filter(|(m, _, result)| {
            let text = result.text();
            *m < unseen_from
                && text.chars().count() > min_chars
                && !text.starts_with(CLEARED_PREFIX)
        })
        .map(|&(m, b, _)| (m, b))
        .collect()
}
// ANCHOR_END: micro

// ANCHOR: pending
/// How many characters the results [`micro_compact`] would clear hold: what
/// a batch would save.
pub fn pending_chars(history: &[Message], keep_recent: usize, min_chars: usize) -> usize {
    clearable(history, keep_recent, min_chars)
        .into_iter()
        .map(|(m, b)| match &history[m].content[b] {
            ContentBlock::ToolResult(result) => result.text().chars().count(),
            _ => 0,
        })
        .sum()
}
// ANCHOR_END: pending
