//! The model stack: a [`Model`] that wraps another and retries what is
//! worth retrying.
//!
//! Every call the harness makes goes through one `Arc<dyn Model>`: the
//! loop's, the subagent's, the compaction summaries, memory's side queries.
//! Wrapping that one model in [`RecoveringModel`] (see
//! [`Recovery::wrap`](super::Recovery::wrap)) gives all of them the same
//! backoff, the same `retry-after` handling and the same fallback model,
//! without any of them knowing: a decorator, like a middleware layer in a
//! web server.
//!
//! What needs the conversation — reactive compaction, `max_tokens`
//! escalation, continuation — cannot live here, because a `Model` sees one
//! request, not a history it may change. That part stays in the lesson's
//! `call_model` hook ([`super::Recovery::send`]).

use std::sync::{Arc, Mutex, MutexGuard};

use shared::error::ApiError;
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{Delta, Request, Response};
use shared::sync::LockExt;

use super::backoff;
use super::events::RecoveryEvent;
use super::policy::{self, Failure};
use super::{RecoveryState, record};

// ANCHOR: model
/// A model that retries transient failures of the model it wraps, and
/// switches to the fallback model after repeated overloads.
pub struct RecoveringModel {
    inner: Arc<dyn Model>,
    state: Arc<Mutex<RecoveryState>>,
}

impl RecoveringModel {
    pub(super) fn new(inner: Arc<dyn Model>, state: Arc<Mutex<RecoveryState>>) -> Self {
        Self { inner, state }
    }

    fn state(&self) -> MutexGuard<'_, RecoveryState> {
        self.state.locked()
    }
}

impl Model for RecoveringModel {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(self.send_with_retries(request, on_delta))
    }
}
// ANCHOR_END: model

// ANCHOR: retries
impl RecoveringModel {
    /// Sends one request until it gets a reply or the policy gives up:
    /// transient failures wait and try again, anything else is returned at
    /// once (a prompt that is too long is the caller's to shrink).
    async fn send_with_retries(
        &self,
        request: &Request<'_>,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Response, ApiError> {
        let mut failed = 0;
        loop {
            // The turn may have moved to the fallback model.
            let model_id = self.state().model_for(request.model);
            let attempt = Request {
                model: &model_id,
                ..request.clone()
            };
            let mut streamed = false;
            let result = {
                let mut watch = |delta: Delta<'_>| {
                    streamed = true;
                    on_delta(delta);
                };
                self.inner.send(&attempt, &mut watch).await
            };
            let error = match result {
                Ok(response) => {
                    self.state().overloads_in_a_row = 0;
                    return Ok(response);
                }
                Err(error) => error,
            };
            // Decide under the lock, wait without it.
            let delay = {
                let mut state = self.state();
                state.count_overload(&error);
                match policy::classify(&error) {
                    Failure::Transient => {}
                    Failure::PromptTooLong => return Err(error),
                    Failure::Final => {
                        let failure = policy::label(&error);
                        record(&mut state, RecoveryEvent::NotRetried { failure });
                        return Err(error);
                    }
                }
                failed += 1;
                if failed >= state.policy.max_attempts {
                    let failure = policy::label(&error);
                    let attempts = failed;
                    record(&mut state, RecoveryEvent::GaveUp { failure, attempts });
                    return Err(error);
                }
                if state.fall_back_if_due(&model_id) {
                    // Another model has its own capacity: no reason to wait.
                    continue;
                }
                let state = &mut *state;
                let delay = backoff::retry_delay(
                    &state.policy,
                    u32::try_from(failed - 1).unwrap_or(u32::MAX),
                    retry_after(&error),
                    &mut state.rng,
                );
                let event = RecoveryEvent::Retry {
                    failure: policy::label(&error),
                    next_attempt: failed + 1,
                    max_attempts: state.policy.max_attempts,
                    delay,
                    restreams: streamed,
                };
                record(state, event);
                delay
            };
            tokio::time::sleep(delay.duration).await;
        }
    }
}
// ANCHOR_END: retries

/// The server's `retry-after`, which only a rate limit carries.
fn retry_after(error: &ApiError) -> Option<std::time::Duration> {
    match error {
        ApiError::RateLimited { retry_after, .. } => *retry_after,
        _ => None,
    }
}
