//! What the provider reports about its prompt cache.

use shared::protocol::Usage;

// ANCHOR: usage
/// Logs (at debug level, shown with `-v`) the input tokens of one model
/// call as the provider reported them: how much it read from its prompt
/// cache, how much it wrote to it, and how much was neither. A provider
/// that reports no cache figures gets the total only; one that reports
/// nothing (the demo model), no line.
pub fn log_cache_usage(usage: &Usage) {
    if let Some(line) = shared::cli::usage_line(usage) {
        tracing::debug!("model call {line}");
    }
}
// ANCHOR_END: usage
