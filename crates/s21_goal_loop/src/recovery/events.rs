//! What recovery did, one event per decision.
//!
//! Every path is visible: each event is emitted as one `[recovery] …`
//! notice (shown dim on standard error, like the `[compact]` and `[hook]`
//! ones), logged with `tracing`, and kept in
//! [`Recovery::events`](super::Recovery::events) for tests and embedders.

use std::fmt;

use super::backoff::Delay;

// ANCHOR: events
/// One recovery decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryEvent {
    /// A transient failure; the same request goes out again after `delay`.
    Retry {
        failure: String,
        next_attempt: usize,
        max_attempts: usize,
        delay: Delay,
        /// Part of the reply had already streamed to the terminal.
        restreams: bool,
    },
    /// Too many overloads in a row: the rest of the turn uses `to`.
    Fallback {
        overloads: usize,
        from: String,
        to: String,
    },
    /// Too many overloads in a row, and no fallback model to switch to.
    NoFallback { overloads: usize, model: String },
    /// The last attempt failed too.
    GaveUp { failure: String, attempts: usize },
    /// A failure no retry can fix.
    NotRetried { failure: String },
    /// The prompt was too long: reactive compaction, then one more try.
    Compacting,
    /// Still too long after compaction, or nothing left to compact.
    StillTooLong,
    /// The reply hit `max_tokens`: the same request goes out again with
    /// more room, and the cut reply is dropped.
    Escalated { from: u32, to: u32 },
    /// `model` refused `max_tokens` `refused` as over its output cap:
    /// the cap (`cap`, when the refusal stated it, else the loop's limit)
    /// bounds its escalations for the rest of the session, and the turn goes
    /// on with `max_tokens` `limit` — continuing the cut reply, if there is
    /// one.
    OutputCapped {
        model: String,
        refused: u32,
        cap: Option<u32>,
        limit: u32,
    },
    /// The reply hit the escalated limit: it is kept and the model asked
    /// to continue.
    Continuation {
        number: usize,
        max: usize,
        dropped_calls: Vec<String>,
    },
    /// Still cut off after every continuation: the reply is handed to the
    /// loop as it is.
    ContinuationsSpent { max: usize },
}
// ANCHOR_END: events

impl fmt::Display for RecoveryEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retry {
                failure,
                next_attempt,
                max_attempts,
                delay,
                restreams,
            } => {
                write!(
                    f,
                    "{failure} — attempt {next_attempt}/{max_attempts} in {delay}"
                )?;
                if *restreams {
                    f.write_str(
                        "; the text shown so far was not kept, and the reply will stream again",
                    )?;
                }
                Ok(())
            }
            Self::Fallback {
                overloads,
                from,
                to,
            } => write!(
                f,
                "{overloads} overloaded replies in a row — switching from {from} to {to} for \
                 the rest of this turn"
            ),
            Self::NoFallback { overloads, model } => write!(
                f,
                "{overloads} overloaded replies in a row — no FALLBACK_MODEL_ID is set, so \
                 staying on {model}"
            ),
            Self::GaveUp { failure, attempts } => {
                write!(f, "{failure} — giving up after {attempts} attempts")
            }
            Self::NotRetried { failure } => {
                write!(
                    f,
                    "{failure} — not retried: the same request would fail again"
                )
            }
            Self::Compacting => f.write_str(
                "prompt too long — compacting the history (lesson 8), then sending it once more",
            ),
            Self::StillTooLong => {
                f.write_str("prompt still too long after compacting — giving up on this request")
            }
            Self::Escalated { from, to } => write!(
                f,
                "reply cut off at max_tokens {from} — sending the same request again with \
                 max_tokens {to}; the cut reply is dropped and will stream again"
            ),
            Self::OutputCapped {
                model,
                refused,
                cap: Some(cap),
                limit,
            } => write!(
                f,
                "{model} refused max_tokens {refused}: its output cap is {cap}, remembered for \
                 this session — max_tokens {limit} for the rest of this turn"
            ),
            Self::OutputCapped {
                model,
                refused,
                cap: None,
                limit,
            } => write!(
                f,
                "{model} refused max_tokens {refused} without stating its output cap — no \
                 more escalations for it this session, max_tokens {limit} for the rest of \
                 this turn"
            ),
            Self::Continuation {
                number,
                max,
                dropped_calls,
            } => {
                write!(
                    f,
                    "reply cut off again — keeping it and asking the model to continue \
                     ({number}/{max})"
                )?;
                if !dropped_calls.is_empty() {
                    write!(
                        f,
                        "; dropped the unfinished tool calls: {}",
                        dropped_calls.join(", ")
                    )?;
                }
                Ok(())
            }
            Self::ContinuationsSpent { max } => write!(
                f,
                "reply still cut off after {max} continuations — ending with what there is"
            ),
        }
    }
}
