//! Error recovery: what happens when a model call fails or is cut short.
//!
//! A model call can go wrong in three ways that are worth recovering from,
//! and recovery has one answer for each. Two layers give them:
//!
//! ```text
//! call_model ─► Recovery::send ─┬─ reply cut at max_tokens ─► once: same request, max_tokens 64000
//!   (the loop's calls only)     │                             then: keep it, "continue" (≤ 3 a turn)
//!                               ├─ 64000 over the model's ──► remember its cap; keep the cut reply,
//!                               │  output cap (400)           "continue" with max(cap, loop's limit)
//!                               └─ prompt too long ─────────► reactive compaction (lesson 8), once
//!                                       │
//! every call ─► RecoveringModel ─┬─ 429 · 529 · 5xx · network · timeout · stream cut
//!   (loop, subagent, summaries,  │      └─► wait (backoff + jitter, or retry-after), same request
//!    memory's side queries)      │          (≤ 10 attempts); 3 × 529 in a row ─► fallback model
//!                                └─ anything else ─► returned: the turn ends, the history valid
//! ```
//!
//! * [`model`]: the decorator every model call goes through — retries and
//!   the fallback model.
//! * [`policy`]: the numbers, and which failures are worth a retry.
//! * [`backoff`]: how long to wait before the next attempt.
//! * [`jitter`]: the small random generator behind the jitter.
//! * [`truncation`]: what is kept of a cut-off reply, and the prompt that
//!   asks the model to continue.
//! * [`output_cap`]: recognising a refusal of the escalated limit, and the
//!   cap it states.
//! * [`events`]: the `[recovery]` notice each decision emits.
//!
//! Nothing here touches the loop. A failed attempt appends nothing (the
//! loop appends only complete replies), so sending the same request again
//! is always safe; the one path that does add to the history, continuation,
//! adds valid messages only.

pub mod backoff;
pub mod events;
pub mod jitter;
pub mod model;
pub mod output_cap;
pub mod policy;
pub mod truncation;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use shared::error::ApiError;
use shared::hooks::ModelCall;
use shared::model::Model;
use shared::notice::Notices;
use shared::protocol::{Response, StopReason};
use shared::sync::LockExt;

use crate::compact::{Compactor, ReactiveOutcome};
pub use backoff::{Delay, DelaySource};
pub use events::RecoveryEvent;
pub use jitter::XorShift;
pub use model::RecoveringModel;
pub use output_cap::Refusal;
pub use policy::{Failure, RecoveryPolicy};

/// The tag of recovery's notices.
pub const RECOVERY_TAG: &str = "recovery";

// ANCHOR: state
/// What the model stack and the hooks share: the policy, the jitter, the
/// fallback decision, and every event so far. A new prompt resets the
/// fallback; the events are kept for the session.
pub(crate) struct RecoveryState {
    policy: RecoveryPolicy,
    rng: XorShift,
    /// Overloaded replies since the last reply or other failure.
    overloads_in_a_row: usize,
    /// The turn switched to the fallback model.
    on_fallback: bool,
    events: Vec<RecoveryEvent>,
    notices: Notices,
}

/// What the hooks' half remembers during one turn.
#[derive(Debug, Default)]
struct TurnState {
    /// `max_tokens` was raised this turn; later calls keep the raised limit.
    escalated: bool,
    /// Continuation prompts sent this turn.
    continuations: usize,
}

/// Recovery for one agent: [`Recovery::wrap`] builds the model stack every
/// call goes through, and [`Recovery::send`] is the `call_model` hook's half.
pub struct Recovery {
    state: Arc<Mutex<RecoveryState>>,
    turn: TurnState,
    /// Output caps learned from refusals, by model id, for the session.
    output_caps: BTreeMap<String, u32>,
}
// ANCHOR_END: state

impl Recovery {
    /// Recovery with `policy`, reporting to `notices`. The jitter is seeded
    /// from the policy's seed, else from the clock.
    pub fn new(policy: RecoveryPolicy, notices: Notices) -> Self {
        let rng = match policy.jitter_seed {
            Some(seed) => XorShift::new(seed),
            None => XorShift::from_time(),
        };
        Self {
            state: Arc::new(Mutex::new(RecoveryState {
                policy,
                rng,
                overloads_in_a_row: 0,
                on_fallback: false,
                events: Vec::new(),
                notices,
            })),
            turn: TurnState::default(),
            output_caps: BTreeMap::new(),
        }
    }

    // ANCHOR: wrap
    /// `model` behind retries, backoff and the fallback model. Every model
    /// call the agent makes should go through the returned model.
    pub fn wrap(&self, model: Arc<dyn Model>) -> Arc<dyn Model> {
        Arc::new(RecoveringModel::new(model, Arc::clone(&self.state)))
    }
    // ANCHOR_END: wrap

    /// Forgets the turn's state: the next call goes to the model the loop
    /// asks for, with the loop's `max_tokens`. Called for every new prompt.
    pub fn start_turn(&mut self) {
        self.turn = TurnState::default();
        let mut state = self.state();
        if state.on_fallback {
            tracing::debug!("new turn: back to the primary model");
        }
        state.on_fallback = false;
        state.overloads_in_a_row = 0;
    }

    /// Everything recovery did so far in this session, oldest first.
    pub fn events(&self) -> Vec<RecoveryEvent> {
        self.state().events.clone()
    }

    /// Whether the current turn runs on the fallback model.
    pub fn on_fallback(&self) -> bool {
        self.state().on_fallback
    }

    /// The policy in force.
    pub fn policy(&self) -> RecoveryPolicy {
        self.state().policy.clone()
    }

    /// Replaces the policy (the jitter keeps its sequence).
    pub fn set_policy(&mut self, policy: RecoveryPolicy) {
        self.state().policy = policy;
    }

    /// The output cap learned for `model` from a refusal this session, if
    /// any.
    pub fn output_cap(&self, model: &str) -> Option<u32> {
        self.output_caps.get(model).copied()
    }

    fn state(&self) -> MutexGuard<'_, RecoveryState> {
        self.state.locked()
    }

    fn record(&self, event: RecoveryEvent) {
        record(&mut self.state(), event);
    }
}

/// Reports `event` as a notice and keeps it.
fn record(state: &mut RecoveryState, event: RecoveryEvent) {
    tracing::debug!(?event, "recovery");
    state.notices.emit(RECOVERY_TAG, event.to_string());
    state.events.push(event);
}

// ANCHOR: fallback
impl RecoveryState {
    /// The model a request for `asked` goes to: the fallback, once the turn
    /// has switched to it.
    fn model_for(&self, asked: &str) -> String {
        match &self.policy.fallback_model {
            Some(fallback) if self.on_fallback => fallback.clone(),
            _ => asked.to_string(),
        }
    }

    /// Counts overloads in a row; any other outcome breaks the run.
    fn count_overload(&mut self, error: &ApiError) {
        if matches!(error, ApiError::Overloaded { .. }) {
            self.overloads_in_a_row += 1;
        } else {
            self.overloads_in_a_row = 0;
        }
    }

    /// After enough overloads in a row, switches the rest of the turn from
    /// `current` to the fallback model, if there is one. Returns whether it
    /// switched.
    fn fall_back_if_due(&mut self, current: &str) -> bool {
        let overloads = self.overloads_in_a_row;
        if self.on_fallback || overloads < self.policy.overloads_before_fallback {
            return false;
        }
        match self.policy.fallback_model.clone() {
            Some(fallback) if fallback != current => {
                self.on_fallback = true;
                self.overloads_in_a_row = 0;
                let event = RecoveryEvent::Fallback {
                    overloads,
                    from: current.to_string(),
                    to: fallback,
                };
                record(self, event);
                true
            }
            // The fallback is the model already in use: nothing to switch.
            Some(_) => false,
            None => {
                if overloads == self.policy.overloads_before_fallback {
                    let event = RecoveryEvent::NoFallback {
                        overloads,
                        model: current.to_string(),
                    };
                    record(self, event);
                }
                false
            }
        }
    }
}
// ANCHOR_END: fallback

// ANCHOR: send
impl Recovery {
    /// Makes the loop's model call (through the model stack, which retries
    /// transient failures), then recovers from what needs the history: a
    /// prompt that is too long, a reply cut off at `max_tokens`, and a model
    /// that refuses the larger limit that reply was asked for again with.
    pub async fn send(
        &mut self,
        compactor: &mut Compactor,
        mut call: ModelCall<'_, '_>,
    ) -> Result<Response, ApiError> {
        let policy = self.policy();
        // The loop's own limit: the one a provider is known to accept.
        let original = call.max_tokens;
        if self.turn.escalated {
            let escalated = self.escalated_limit(&policy, &call.model_id);
            call.max_tokens = call.max_tokens.max(escalated);
        }
        // Reactive compaction happens at most once per call, as in lesson 8.
        let mut compacted = false;
        // The reply cut at the loop's limit, kept while its escalated
        // request is out, in case the model refuses the larger limit.
        let mut cut = None;
        loop {
            let mut result = call.send().await;
            if let Err(error) = &result
                && call.max_tokens > original
                && let Some(refusal) = output_cap::refusal(error, call.max_tokens, cut.is_some())
            {
                call.max_tokens = self.learn_output_cap(&call, refusal, original);
                match cut.take() {
                    // Handled below like a reply cut at the escalated
                    // limit: kept, and continued.
                    Some(response) => result = Ok(response),
                    None => continue,
                }
            }
            let response = match result {
                Ok(response) => response,
                Err(error @ ApiError::PromptTooLong { .. }) if !compacted => {
                    compacted = true;
                    self.record(RecoveryEvent::Compacting);
                    let outcome = compactor.reactive_compact(&mut *call.history).await;
                    if outcome != ReactiveOutcome::Unchanged {
                        continue;
                    }
                    self.record(RecoveryEvent::StillTooLong);
                    return Err(error);
                }
                Err(error @ ApiError::PromptTooLong { .. }) => {
                    self.record(RecoveryEvent::StillTooLong);
                    return Err(error);
                }
                Err(error) => return Err(error),
            };
            if response.stop_reason != Some(StopReason::MaxTokens) {
                return Ok(response);
            }
            // Asked now, since the call may have moved to the fallback model.
            let escalated = self.escalated_limit(&policy, &call.model_id);
            if !self.turn.escalated && call.max_tokens < escalated {
                // The cut reply is not appended: the same request goes out
                // again with room for the whole answer. It is kept aside
                // until that request is answered.
                self.turn.escalated = true;
                self.record(RecoveryEvent::Escalated {
                    from: call.max_tokens,
                    to: escalated,
                });
                call.max_tokens = escalated;
                cut = Some(response);
                continue;
            }
            let max = policy.max_continuations;
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

// ANCHOR: output_cap
impl Recovery {
    /// The `max_tokens` an escalation asks of the model `model_id` is
    /// served by: the policy's limit for it, never above a cap it stated.
    fn escalated_limit(&self, policy: &RecoveryPolicy, model_id: &str) -> u32 {
        let model = self.state().model_for(model_id);
        let limit = policy.escalated_max_tokens_for(&model);
        self.output_caps
            .get(&model)
            .map_or(limit, |cap| limit.min(*cap))
    }

    /// Remembers the cap the model refused `call`'s limit with, for the
    /// session, and returns the `max_tokens` the turn goes on with: the
    /// stated cap if it is above the loop's `original` limit, else
    /// `original`. Either is below the refused limit, so each refusal lowers
    /// the limit, and none goes below `original`.
    fn learn_output_cap(
        &mut self,
        call: &ModelCall<'_, '_>,
        refusal: Refusal,
        original: u32,
    ) -> u32 {
        let model = self.state().model_for(&call.model_id);
        // Without a stated cap, the loop's limit is the most known to work.
        let cap = refusal.cap.unwrap_or(original);
        let known = self.output_caps.entry(model.clone()).or_insert(cap);
        *known = (*known).min(cap);
        let limit = cap.max(original);
        self.record(RecoveryEvent::OutputCapped {
            model,
            refused: call.max_tokens,
            cap: refusal.cap,
            limit,
        });
        limit
    }
}
// ANCHOR_END: output_cap
