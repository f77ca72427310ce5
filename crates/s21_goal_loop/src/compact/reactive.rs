//! Reactive compaction: the provider said the prompt is too long.
//!
//! The estimate in [`super::estimate`] is only an estimate, and one round
//! can add more than the margin below the threshold. When the provider
//! refuses a request with [`ApiError::PromptTooLong`], the history is
//! compacted on the spot and the request sent once more:
//!
//! * the transcript is saved and everything except the last few messages
//!   ([`CompactConfig::reactive_keep_messages`](super::CompactConfig)) is
//!   replaced by a summary;
//! * if the summary fails (or the circuit breaker is open), an aggressive
//!   snip instead: the first message and the last few are kept, and every
//!   tool result the model has already seen is cleared.
//!
//! Only one retry per call: a second refusal in a row is returned to the
//! loop as the error, which ends the turn with a valid history. Lesson 11
//! puts this inside a larger recovery policy (backoff, a fallback model), so
//! the pieces are public: [`Compactor::reactive_compact`] to shrink a
//! history, and [`send_with_reactive_compaction`] to wrap one call.

use shared::error::ApiError;
use shared::hooks::ModelCall;
use shared::protocol::{Message, Response, Role};

use super::{Compactor, micro, snip};

/// What reactive compaction did to the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReactiveOutcome {
    /// The older part was replaced by a summary; the transcript is at this
    /// path (relative to the workspace).
    Summarised { transcript: String },
    /// No summary; messages were dropped and old results cleared.
    Snipped { dropped: usize, cleared: usize },
    /// Nothing could be removed: retrying would fail the same way.
    Unchanged,
}

// ANCHOR: send
/// Sends `call`; if the provider answers that the prompt is too long,
/// compacts `call.history` with [`Compactor::reactive_compact`] and sends
/// it once more. A second `PromptTooLong` (or any other error) is returned
/// as it is.
pub async fn send_with_reactive_compaction(
    compactor: &mut Compactor,
    mut call: ModelCall<'_, '_>,
) -> Result<Response, ApiError> {
    let error = match call.send().await {
        Err(error @ ApiError::PromptTooLong { .. }) => error,
        other => return other,
    };
    compactor.notice(&format!("reactive compact: {error}"));
    match compactor.reactive_compact(&mut *call.history).await {
        ReactiveOutcome::Unchanged => Err(error),
        _ => call.send().await,
    }
}
// ANCHOR_END: send

// ANCHOR: reactive
impl Compactor {
    /// Shrinks `history` after the provider refused it as too long: a
    /// summary of all but the last few messages, or, if that fails, an
    /// aggressive snip. The history stays valid whatever happens.
    pub async fn reactive_compact(&mut self, history: &mut Vec<Message>) -> ReactiveOutcome {
        let keep = self.config.reactive_keep_messages;
        if !self.breaker_open() {
            let cut = reactive_cut(history, keep);
            match self
                .summarise_prefix(history, cut, "Reactive compact")
                .await
            {
                Ok(transcript) => {
                    self.failures = 0;
                    self.notice(&format!(
                        "reactive compact: transcript saved to {transcript}; \
                         older history replaced by a summary"
                    ));
                    return ReactiveOutcome::Summarised { transcript };
                }
                Err(error) => self.summary_failed(&error),
            }
        }
        let dropped = snip::snip(history, keep + 1, 1);
        let cleared = micro::micro_compact(history, 0, self.config.min_clear_chars);
        if dropped + cleared == 0 {
            self.notice("reactive compact: nothing left to remove");
            return ReactiveOutcome::Unchanged;
        }
        self.notice(&format!(
            "reactive compact: aggressive snip dropped {dropped} messages and cleared \
             {cleared} tool results"
        ));
        ReactiveOutcome::Snipped { dropped, cleared }
    }
}

/// Where the summarised part ends: at the first assistant message among the
/// last `keep`, so the kept part starts a round; the whole history if there
/// is none.
pub fn reactive_cut(history: &[Message], keep: usize) -> usize {
    let from = history.len().saturating_sub(keep);
    (from..history.len())
        .find(|&index| index > 0 && history[index].role == Role::Assistant)
        .unwrap_or(history.len())
}
// ANCHOR_END: reactive
