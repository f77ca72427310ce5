//! Error recovery: what happens when a model call fails or is cut short.
//!
//! A model call can go wrong in three ways that are worth recovering from,
//! and [`Recovery::send`] wraps the call with one answer for each:
//!
//! ```text
//! call_model ─► send ─┬─ reply cut at max_tokens ─► once: same request, max_tokens 64000
//!                     │                             then: keep it, "continue" (≤ 3 a turn)
//!                     ├─ prompt too long ─────────► reactive compaction (lesson 8), once
//!                     ├─ 429 · 529 · 5xx · network · timeout · stream cut
//!                     │      └─► wait (backoff + jitter, or retry-after), same request
//!                     │          (≤ 10 attempts); 3 × 529 in a row ─► fallback model
//!                     └─ anything else ─► returned: the turn ends, the history valid
//! ```
//!
//! * [`policy`]: the numbers, and which failures are worth a retry.
//! * [`backoff`]: how long to wait before the next attempt.
//! * [`jitter`]: the small random generator behind the jitter.
//! * [`truncation`]: what is kept of a cut-off reply, and the prompt that
//!   asks the model to continue.
//! * [`events`]: the `[recovery]` notice each decision prints.
//!
//! Nothing here touches the loop. A failed attempt appends nothing (the
//! loop appends only complete replies), so sending the same request again
//! is always safe; the one path that does add to the history, continuation,
//! adds valid messages only.
//!
//! Only the conversation's own calls come through here. Memory's side
//! queries (lesson 9), the summaries (lesson 8) and the subagent (lesson 6)
//! call the model directly, with the model id the agent was built with: they
//! are neither retried nor moved to the fallback model, and each handles its
//! own failure (a failed extraction is reported, and the turn still ends).

pub mod backoff;
pub mod events;
pub mod jitter;
pub mod policy;
pub mod truncation;

use shared::error::ApiError;
use shared::hooks::ModelCall;
use shared::protocol::{Delta, Response, StopReason};

use crate::compact::{Compactor, ReactiveOutcome};
pub use backoff::{Delay, DelaySource};
pub use events::RecoveryEvent;
pub use jitter::XorShift;
pub use policy::{Failure, RecoveryPolicy};

// ANCHOR: state
/// What recovery remembers during one turn. A new prompt starts afresh.
#[derive(Debug, Default)]
struct TurnState {
    /// `max_tokens` was raised this turn; later calls keep the raised limit.
    escalated: bool,
    /// Continuation prompts sent this turn.
    continuations: usize,
    /// Overloaded replies since the last reply or other failure.
    overloads_in_a_row: usize,
    /// The turn switched to the fallback model.
    on_fallback: bool,
}

/// The recovery policy and its state, owned by the lesson's hooks.
pub struct Recovery {
    /// The bounds; tests and embedders may change them at any time.
    pub policy: RecoveryPolicy,
    rng: XorShift,
    turn: TurnState,
    events: Vec<RecoveryEvent>,
}
// ANCHOR_END: state

impl Default for Recovery {
    fn default() -> Self {
        Self::new(RecoveryPolicy::default())
    }
}

impl Recovery {
    /// Recovery with `policy`, its jitter seeded from the clock.
    pub fn new(policy: RecoveryPolicy) -> Self {
        Self {
            policy,
            rng: XorShift::from_time(),
            turn: TurnState::default(),
            events: Vec::new(),
        }
    }

    /// Seeds the jitter, so every delay is known in advance (tests).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.rng = XorShift::new(seed);
        self
    }

    /// Forgets the turn's state: the next call goes to the model the loop
    /// asks for, with the loop's `max_tokens`. Called for every new prompt.
    pub fn start_turn(&mut self) {
        if self.turn.on_fallback {
            tracing::debug!("new turn: back to the primary model");
        }
        self.turn = TurnState::default();
    }

    /// Everything recovery did so far in this session, oldest first.
    pub fn events(&self) -> &[RecoveryEvent] {
        &self.events
    }

    /// Whether the current turn runs on the fallback model.
    pub fn on_fallback(&self) -> bool {
        self.turn.on_fallback
    }

    fn record(&mut self, event: RecoveryEvent) {
        events::report(&event);
        self.events.push(event);
    }
}

// ANCHOR: send
impl Recovery {
    /// Makes the model call, recovering from what can be recovered from.
    /// The error returned is the last one, after the policy gave up.
    pub async fn send(
        &mut self,
        compactor: &mut Compactor,
        mut call: ModelCall<'_, '_>,
    ) -> Result<Response, ApiError> {
        let escalated = self.policy.escalated_max_tokens;
        if self.turn.escalated {
            call.max_tokens = call.max_tokens.max(escalated);
        }
        // Reactive compaction happens at most once per call, as in lesson 8.
        let mut compacted = false;
        loop {
            let response = self
                .send_with_retries(compactor, &mut call, &mut compacted)
                .await?;
            if response.stop_reason != Some(StopReason::MaxTokens) {
                return Ok(response);
            }
            if !self.turn.escalated && call.max_tokens < escalated {
                // The cut reply is not appended: the same request goes out
                // again with room for the whole answer.
                self.turn.escalated = true;
                self.record(RecoveryEvent::Escalated {
                    from: call.max_tokens,
                    to: escalated,
                });
                call.max_tokens = escalated;
                continue;
            }
            let max = self.policy.max_continuations;
            if self.turn.continuations >= max {
                // The loop gets the cut reply and handles it as in every
                // lesson: a cut tool call is answered, not run.
                self.record(RecoveryEvent::ContinuationsSpent { max });
                return Ok(response);
            }
            self.turn.continuations += 1;
            let dropped_calls =
                truncation::append_continuation(&mut *call.history, response.content);
            self.record(RecoveryEvent::Continuation {
                number: self.turn.continuations,
                max,
                dropped_calls,
            });
        }
    }
}
// ANCHOR_END: send

// ANCHOR: retries
impl Recovery {
    /// Sends one request until it gets a reply or the policy gives up:
    /// transient failures wait and try again, a prompt that is too long is
    /// compacted once, anything else is returned at once.
    async fn send_with_retries(
        &mut self,
        compactor: &mut Compactor,
        call: &mut ModelCall<'_, '_>,
        compacted: &mut bool,
    ) -> Result<Response, ApiError> {
        let mut failed = 0;
        loop {
            if self.turn.on_fallback
                && let Some(fallback) = &self.policy.fallback_model
            {
                call.model_id.clone_from(fallback);
            }
            let (result, streamed) = send_watching(call).await;
            let error = match result {
                Ok(response) => {
                    self.turn.overloads_in_a_row = 0;
                    return Ok(response);
                }
                Err(error) => error,
            };
            self.count_overload(&error);
            match policy::classify(&error) {
                Failure::Transient => {}
                Failure::PromptTooLong if !*compacted => {
                    *compacted = true;
                    self.record(RecoveryEvent::Compacting);
                    let outcome = compactor.reactive_compact(&mut *call.history).await;
                    if outcome != ReactiveOutcome::Unchanged {
                        continue;
                    }
                    self.record(RecoveryEvent::StillTooLong);
                    return Err(error);
                }
                Failure::PromptTooLong => {
                    self.record(RecoveryEvent::StillTooLong);
                    return Err(error);
                }
                Failure::Final => {
                    self.record(RecoveryEvent::NotRetried {
                        failure: policy::label(&error),
                    });
                    return Err(error);
                }
            }

            failed += 1;
            if failed >= self.policy.max_attempts {
                self.record(RecoveryEvent::GaveUp {
                    failure: policy::label(&error),
                    attempts: failed,
                });
                return Err(error);
            }
            if self.fall_back_if_due(call) {
                // Another model has its own capacity: no reason to wait.
                continue;
            }
            let delay = backoff::retry_delay(
                &self.policy,
                u32::try_from(failed - 1).unwrap_or(u32::MAX),
                retry_after(&error),
                &mut self.rng,
            );
            self.record(RecoveryEvent::Retry {
                failure: policy::label(&error),
                next_attempt: failed + 1,
                max_attempts: self.policy.max_attempts,
                delay,
                restreams: streamed,
            });
            tokio::time::sleep(delay.duration).await;
        }
    }
}
// ANCHOR_END: retries

// ANCHOR: fallback
impl Recovery {
    /// Counts overloads in a row; any other outcome breaks the run.
    fn count_overload(&mut self, error: &ApiError) {
        if matches!(error, ApiError::Overloaded { .. }) {
            self.turn.overloads_in_a_row += 1;
        } else {
            self.turn.overloads_in_a_row = 0;
        }
    }

    /// After enough overloads in a row, switches the rest of the turn to
    /// the fallback model, if there is one. Returns whether it switched.
    fn fall_back_if_due(&mut self, call: &mut ModelCall<'_, '_>) -> bool {
        let overloads = self.turn.overloads_in_a_row;
        if self.turn.on_fallback || overloads < self.policy.overloads_before_fallback {
            return false;
        }
        match self.policy.fallback_model.clone() {
            Some(fallback) if fallback != call.model_id => {
                let from = std::mem::replace(&mut call.model_id, fallback.clone());
                self.turn.on_fallback = true;
                self.turn.overloads_in_a_row = 0;
                self.record(RecoveryEvent::Fallback {
                    overloads,
                    from,
                    to: fallback,
                });
                true
            }
            // The fallback is the model already in use: nothing to switch.
            Some(_) => false,
            None => {
                if overloads == self.policy.overloads_before_fallback {
                    self.record(RecoveryEvent::NoFallback {
                        overloads,
                        model: call.model_id.clone(),
                    });
                }
                false
            }
        }
    }
}
// ANCHOR_END: fallback

// ANCHOR: watching
/// Sends the request as it stands, and says whether any of the reply
/// reached the terminal before it ended — if the attempt failed, that text
/// was shown but is not kept, and the next attempt streams it again.
async fn send_watching(call: &mut ModelCall<'_, '_>) -> (Result<Response, ApiError>, bool) {
    let mut streamed = false;
    let result = {
        let on_delta = &mut *call.on_delta;
        let mut watch = |delta: Delta<'_>| {
            streamed = true;
            on_delta(delta);
        };
        let mut attempt = ModelCall {
            model: call.model,
            model_id: call.model_id.clone(),
            max_tokens: call.max_tokens,
            system: call.system,
            tools: call.tools,
            history: &mut *call.history,
            on_delta: &mut watch,
        };
        attempt.send().await
    };
    (result, streamed)
}
// ANCHOR_END: watching

/// The server's `retry-after`, which only a rate limit carries.
fn retry_after(error: &ApiError) -> Option<std::time::Duration> {
    match error {
        ApiError::RateLimited { retry_after, .. } => *retry_after,
        _ => None,
    }
}
