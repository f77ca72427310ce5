//! What the provider reports about its prompt cache.

use shared::protocol::Usage;

// ANCHOR: usage
/// Logs (at debug level, shown with `-v`) how much of the request the
/// provider read from its prompt cache and how much it wrote to it. Only
/// the Anthropic API reports these figures; for other providers this says
/// nothing.
pub fn log_cache_usage(usage: &Usage) {
    if usage.cache_read_input_tokens.is_none() && usage.cache_creation_input_tokens.is_none() {
        return;
    }
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    let written = usage.cache_creation_input_tokens.unwrap_or(0);
    tracing::debug!(
        "prompt cache: read {read} tokens, wrote {written}, {} input tokens uncached",
        usage.input_tokens
    );
}
// ANCHOR_END: usage
