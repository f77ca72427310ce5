//! The `compact` tool: the model asks for a summary itself.
//!
//! The tool does not compact anything while it runs. The other results of
//! the same reply are not in the history yet, and replacing the history
//! from inside a tool would leave this call's own `tool_result` answering a
//! `tool_use` that is gone — the very thing no layer may do. So the tool
//! only raises a flag. The loop appends the round's results as usual, and
//! the pipeline, at the next `before_model_call`, sees the flag and
//! summarises: the `compact` call and its result are summarised away
//! together with everything else.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;

use crate::dispatch::{ToolContext, ToolRegistry};

/// The tool's name, as the model calls it.
pub const TOOL_NAME: &str = "compact";

// ANCHOR: spec
/// What the model is told about `compact` (the course's schema: no input).
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        TOOL_NAME,
        "Summarize earlier conversation to free context space. The summary replaces \
         the conversation before your next step; the full transcript stays on disk.",
        json!({"type": "object", "properties": {}}),
    )
}
// ANCHOR_END: spec

/// State the tool and the pipeline share.
#[derive(Debug, Default)]
pub struct Flags {
    /// Set by the tool, taken by the next `before_model_call`.
    pub requested: AtomicBool,
    /// Set when the circuit breaker opens: no more summaries.
    pub breaker_open: AtomicBool,
}

// ANCHOR: handler
/// Adds `compact` to the dispatch map, bound to `flags`.
pub fn register(tools: &mut ToolRegistry, flags: Arc<Flags>) {
    tools.register(spec(), move |_input: Value, _: ToolContext| {
        std::future::ready(request(&flags))
    });
}

/// Runs one `compact` call: raises the flag, or says why it would not help.
pub fn request(flags: &Flags) -> ToolOutput {
    if flags.breaker_open.load(Ordering::SeqCst) {
        return ToolOutput::error(
            "Compaction is unavailable: the last summaries failed, so no more are attempted \
             in this session. Old tool results are still cleared automatically.",
        );
    }
    flags.requested.store(true, Ordering::SeqCst);
    ToolOutput::ok(
        "Compaction requested: the conversation will be summarised before your next step.",
    )
}
// ANCHOR_END: handler
