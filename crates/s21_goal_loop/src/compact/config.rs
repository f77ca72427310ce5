//! The numbers that decide when each layer acts.
//!
//! They all live in one struct, [`CompactConfig`], so a reader finds them in
//! one place. [`Default`] holds the course's values. The six a user is most
//! likely to want to change can be overridden from the environment (or a
//! `.env` file), which is also how the chapter shows the layers at work
//! without a session of a hundred rounds:
//!
//! | variable                      | field                                          | default |
//! |-------------------------------|------------------------------------------------|---------|
//! | `COMPACT_TOOL_RESULT_BUDGET`  | [`CompactConfig::tool_result_budget_chars`]    | 200000  |
//! | `COMPACT_MAX_MESSAGES`        | [`CompactConfig::max_messages`]                | 50      |
//! | `COMPACT_SNIP_TO_MESSAGES`    | [`CompactConfig::snip_to_messages`]            | 25      |
//! | `COMPACT_KEEP_RECENT_RESULTS` | [`CompactConfig::keep_recent_tool_results`]    | 3       |
//! | `COMPACT_MICRO_BATCH_CHARS`   | [`CompactConfig::micro_batch_chars`]           | 16000   |
//! | `COMPACT_THRESHOLD_TOKENS`    | [`CompactConfig::threshold_tokens`]            | 50000   |
//!
//! Layers 2 and 3 each have two marks, a high one that makes them act and a
//! low one they compact down to, so that they act rarely and in batches
//! (see [`super::batch`]): between two batches the history only grows at
//! its end, which is what lets the provider's prompt cache reuse it
//! (chapter 10). Setting `snip_to_messages` to `max_messages` and
//! `micro_batch_chars` to 0 compacts a little before every call instead, as
//! the course does.

use shared::settings::{self, InvalidSetting};

// ANCHOR: config
/// When and how much each layer compacts. The defaults are the course's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactConfig {
    /// Layer 1, tool-result budget: the most characters of tool output the
    /// newest message may hold. Above it, its largest results are saved to
    /// `.task_outputs/tool-results/` and replaced by a preview.
    pub tool_result_budget_chars: usize,
    /// Layer 1: how many characters of a saved result stay in context as
    /// its preview.
    pub preview_chars: usize,
    /// Layer 2, snip: past this many messages (the high-water mark), the
    /// middle of the history is dropped.
    pub max_messages: usize,
    /// Layer 2: how many messages a snip leaves at most (the low-water
    /// mark; never more than `max_messages`). Well under the limit, so that
    /// the next snip is many rounds away.
    pub snip_to_messages: usize,
    /// Layer 2: how many messages at the start are always kept (the task
    /// and the first round), extended to the end of a round.
    pub keep_head_messages: usize,
    /// Layer 3, micro-compact: how many of the most recent tool results
    /// keep their content when it runs (the low-water mark). Older ones are
    /// replaced by a placeholder.
    pub keep_recent_tool_results: usize,
    /// Layer 3: micro-compact waits until the older results it would clear
    /// hold more than this many characters (the high-water mark), then
    /// clears them all at once. 0 clears them before every call.
    /// When either layer acts, the other does too (see [`super::batch`]).
    pub micro_batch_chars: usize,
    /// Layer 3: results up to this many characters are left alone, because
    /// the placeholder would not be shorter.
    pub min_clear_chars: usize,
    /// Layer 4, summary: above this many estimated tokens (see
    /// [`super::estimate`]) the history is replaced by a summary.
    pub threshold_tokens: usize,
    /// Layer 4: the most characters of conversation sent to the summariser;
    /// the middle of a longer one is left out (it is in the transcript).
    pub summary_input_chars: usize,
    /// Layer 4: `max_tokens` of the summary call.
    pub summary_max_tokens: u32,
    /// Layer 4: after this many failed summaries in a row, no more are
    /// attempted in this session (the circuit breaker).
    pub max_summary_failures: usize,
    /// Reactive compaction: how many recent messages are kept verbatim
    /// after the summary of everything before them.
    pub reactive_keep_messages: usize,
}

impl Default for CompactConfig {
    fn default() -> Self {
        Self {
            tool_result_budget_chars: 200_000,
            preview_chars: 2_000,
            max_messages: 50,
            snip_to_messages: 25,
            keep_head_messages: 3,
            keep_recent_tool_results: 3,
            micro_batch_chars: 16_000,
            min_clear_chars: 120,
            threshold_tokens: 50_000,
            summary_input_chars: 80_000,
            summary_max_tokens: 2_000,
            max_summary_failures: 3,
            reactive_keep_messages: 5,
        }
    }
}
// ANCHOR_END: config

/// Overrides [`CompactConfig::tool_result_budget_chars`].
pub const ENV_TOOL_RESULT_BUDGET: &str = "COMPACT_TOOL_RESULT_BUDGET";
/// Overrides [`CompactConfig::max_messages`].
pub const ENV_MAX_MESSAGES: &str = "COMPACT_MAX_MESSAGES";
/// Overrides [`CompactConfig::snip_to_messages`].
pub const ENV_SNIP_TO_MESSAGES: &str = "COMPACT_SNIP_TO_MESSAGES";
/// Overrides [`CompactConfig::keep_recent_tool_results`].
pub const ENV_KEEP_RECENT_RESULTS: &str = "COMPACT_KEEP_RECENT_RESULTS";
/// Overrides [`CompactConfig::micro_batch_chars`].
pub const ENV_MICRO_BATCH_CHARS: &str = "COMPACT_MICRO_BATCH_CHARS";
/// Overrides [`CompactConfig::threshold_tokens`].
pub const ENV_THRESHOLD_TOKENS: &str = "COMPACT_THRESHOLD_TOKENS";

impl CompactConfig {
    /// The defaults, with the overrides `lookup` finds (`main` passes the
    /// environment, see [`shared::settings`]). A value that is not a number
    /// is an error rather than silently ignored: a user who set it expects
    /// it to count.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, InvalidSetting> {
        let mut config = Self::default();
        let settings: [(&'static str, &mut usize, usize); 6] = [
            (
                ENV_TOOL_RESULT_BUDGET,
                &mut config.tool_result_budget_chars,
                1,
            ),
            (ENV_MAX_MESSAGES, &mut config.max_messages, 1),
            (ENV_SNIP_TO_MESSAGES, &mut config.snip_to_messages, 1),
            (
                ENV_KEEP_RECENT_RESULTS,
                &mut config.keep_recent_tool_results,
                0,
            ),
            (ENV_MICRO_BATCH_CHARS, &mut config.micro_batch_chars, 0),
            (ENV_THRESHOLD_TOKENS, &mut config.threshold_tokens, 1),
        ];
        for (variable, field, minimum) in settings {
            if let Some(number) = settings::number(&lookup, variable, minimum)? {
                *field = number;
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_and_garbage_is_refused() {
        let config = CompactConfig::from_lookup(|name| match name {
            ENV_THRESHOLD_TOKENS => Some("2_000".into()),
            ENV_KEEP_RECENT_RESULTS => Some("0".into()),
            ENV_MICRO_BATCH_CHARS => Some("0".into()),
            ENV_SNIP_TO_MESSAGES => Some("50".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.threshold_tokens, 2_000);
        assert_eq!(config.keep_recent_tool_results, 0);
        assert_eq!(config.micro_batch_chars, 0);
        assert_eq!(config.snip_to_messages, 50);
        assert_eq!(config.max_messages, 50);

        let error = CompactConfig::from_lookup(|name| {
            (name == ENV_MAX_MESSAGES).then(|| "lots".to_string())
        })
        .unwrap_err();
        assert_eq!(error.variable, ENV_MAX_MESSAGES);
        assert!(
            CompactConfig::from_lookup(|name| {
                (name == ENV_THRESHOLD_TOKENS).then(|| "0".to_string())
            })
            .is_err()
        );
    }
}
