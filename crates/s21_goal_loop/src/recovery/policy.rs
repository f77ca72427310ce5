//! The recovery policy: which failures are worth another try, and the
//! numbers that bound every recovery path.
//!
//! All the numbers live in [`RecoveryPolicy`], whose [`Default`] holds the
//! course's values. Three come from the environment (or a `.env` file) when
//! set there:
//!
//! | variable                        | field                                     | default |
//! |---------------------------------|-------------------------------------------|---------|
//! | `FALLBACK_MODEL_ID`             | [`RecoveryPolicy::fallback_model`]        | none    |
//! | `RECOVERY_BASE_DELAY_MS`        | [`RecoveryPolicy::base_delay`]            | 500     |
//! | `RECOVERY_ESCALATED_MAX_TOKENS` | [`RecoveryPolicy::escalated_max_tokens`]  | 64000   |
//!
//! The second exists for scripted runs and end-to-end tests, which want the
//! real backoff path without waiting seconds for it. The third is for a
//! model or server whose output cap is below 64,000: it sets the escalated
//! limit for every model, in place of the per-model table.

use std::collections::BTreeMap;
use std::time::Duration;

use shared::error::ApiError;

use shared::settings::{self, InvalidSetting};

/// Names the model to switch to after repeated overloads.
pub const ENV_FALLBACK_MODEL: &str = "FALLBACK_MODEL_ID";
/// Overrides [`RecoveryPolicy::base_delay`], in milliseconds.
pub const ENV_BASE_DELAY_MS: &str = "RECOVERY_BASE_DELAY_MS";
/// Overrides [`RecoveryPolicy::escalated_max_tokens`] for every model.
pub const ENV_ESCALATED_MAX_TOKENS: &str = "RECOVERY_ESCALATED_MAX_TOKENS";

// ANCHOR: policy
/// The bounds of every recovery path. The defaults are the course's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryPolicy {
    /// Attempts at one request, the first included, before a transient
    /// failure is given up on and returned.
    pub max_attempts: usize,
    /// The wait after the first failed attempt; it doubles after each one.
    pub base_delay: Duration,
    /// The longest computed wait, however many attempts have failed.
    pub max_delay: Duration,
    /// Up to this share of the computed wait, in percent, is added at
    /// random, so that many clients that failed together do not all retry
    /// together.
    pub max_jitter_percent: u32,
    /// The longest a `retry-after` header may make us wait. A server that
    /// asks for an hour is not going to be waited on in a terminal.
    pub max_retry_after: Duration,
    /// Overloaded replies in a row that switch the turn to
    /// [`Self::fallback_model`].
    pub overloads_before_fallback: usize,
    /// The model to fall back to; `None` keeps retrying the same model.
    pub fallback_model: Option<String>,
    /// `max_tokens` for a request sent again after its reply was cut off,
    /// for a model the table below does not name.
    pub escalated_max_tokens: u32,
    /// The escalated `max_tokens` of models whose output cap is lower: the
    /// key is part of a model id (`claude-opus-4-1` names
    /// `claude-opus-4-1-20250805`), and the longest key the id contains
    /// wins. A cap the provider states when it refuses a limit is learned
    /// too, for the rest of the session (see [`super::output_cap`]).
    pub escalated_max_tokens_by_model: BTreeMap<String, u32>,
    /// Continuation prompts per turn once even the escalated limit is hit.
    pub max_continuations: usize,
    /// Seeds the jitter, so every delay is known in advance (tests); `None`
    /// seeds it from the clock.
    pub jitter_seed: Option<u64>,
}

impl Default for RecoveryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 10,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_millis(32_000),
            max_jitter_percent: 25,
            max_retry_after: Duration::from_secs(60),
            overloads_before_fallback: 3,
            fallback_model: None,
            escalated_max_tokens: 64_000,
            // Claude Opus 4 (by its dated id and its alias) and Opus 4.1
            // write at most 32,000 tokens a reply.
            escalated_max_tokens_by_model: [
                ("claude-opus-4-2025", 32_000),
                ("claude-opus-4-0", 32_000),
                ("claude-opus-4-1", 32_000),
            ]
            .into_iter()
            .map(|(model, limit)| (model.to_string(), limit))
            .collect(),
            max_continuations: 3,
            jitter_seed: None,
        }
    }
}
// ANCHOR_END: policy

impl RecoveryPolicy {
    /// The defaults, with the overrides `lookup` finds (`main` passes the
    /// environment, see [`shared::settings`]). An empty
    /// `FALLBACK_MODEL_ID` means none; a delay that is not a number is an
    /// error, since the user who set it expects it to count.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, InvalidSetting> {
        let mut policy = Self {
            fallback_model: settings::text(&lookup, ENV_FALLBACK_MODEL),
            ..Self::default()
        };
        if let Some(millis) = settings::number(&lookup, ENV_BASE_DELAY_MS, 0u64)? {
            policy.base_delay = Duration::from_millis(millis);
        }
        // One number the user chose, for whatever model they run.
        if let Some(limit) = settings::number(&lookup, ENV_ESCALATED_MAX_TOKENS, 1u32)? {
            policy.escalated_max_tokens = limit;
            policy.escalated_max_tokens_by_model.clear();
        }
        Ok(policy)
    }

    /// The escalated `max_tokens` for `model`: the longest entry of
    /// [`Self::escalated_max_tokens_by_model`] its id contains, else
    /// [`Self::escalated_max_tokens`].
    pub fn escalated_max_tokens_for(&self, model: &str) -> u32 {
        self.escalated_max_tokens_by_model
            .iter()
            .filter(|(key, _)| model.contains(key.as_str()))
            .max_by_key(|(key, _)| key.len())
            .map_or(self.escalated_max_tokens, |(_, limit)| *limit)
    }
}

// ANCHOR: classify
/// What a failed call calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Worth the same request again after a wait: 429, 529, 5xx, network
    /// trouble, a timeout, a stream that broke off.
    Transient,
    /// The history is too long for the model: compact it, then send again.
    PromptTooLong,
    /// Sending the same request again would fail the same way (a bad key,
    /// an invalid request): return it.
    Final,
}

/// Sorts a failure by the error's kind, never by its text.
pub fn classify(error: &ApiError) -> Failure {
    match error {
        ApiError::PromptTooLong { .. } => Failure::PromptTooLong,
        error if error.is_retryable() => Failure::Transient,
        _ => Failure::Final,
    }
}
// ANCHOR_END: classify

/// A short name for the failure, for the one-line notices.
pub fn label(error: &ApiError) -> String {
    match error {
        ApiError::RateLimited { .. } => "429 rate limited".into(),
        ApiError::Overloaded { .. } => "529 overloaded".into(),
        ApiError::PromptTooLong { .. } => "prompt too long".into(),
        ApiError::InvalidRequest { .. } => "400 invalid request".into(),
        ApiError::Authentication { .. } => "authentication failed".into(),
        ApiError::Server { status, .. } => format!("{status} server error"),
        ApiError::Http { status, .. } => format!("HTTP {status}"),
        ApiError::Network { .. } => "network error".into(),
        ApiError::Timeout(_) => "timed out".into(),
        ApiError::StreamCutShort { .. } => "stream cut short".into(),
        ApiError::StreamError { kind, .. } => format!("stream error ({kind})"),
        ApiError::Protocol { .. } => "unreadable reply".into(),
        ApiError::ScriptExhausted(_) => "script exhausted".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_and_garbage_is_refused() {
        let policy = RecoveryPolicy::from_lookup(|name| match name {
            ENV_FALLBACK_MODEL => Some(" claude-haiku-4-5 ".into()),
            ENV_BASE_DELAY_MS => Some("1".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(policy.fallback_model.as_deref(), Some("claude-haiku-4-5"));
        assert_eq!(policy.base_delay, Duration::from_millis(1));
        assert_eq!(policy.max_attempts, 10);

        let empty = RecoveryPolicy::from_lookup(|name| {
            (name == ENV_FALLBACK_MODEL).then(|| "  ".to_string())
        })
        .unwrap();
        assert_eq!(empty.fallback_model, None);

        let error = RecoveryPolicy::from_lookup(|name| {
            (name == ENV_BASE_DELAY_MS).then(|| "fast".to_string())
        })
        .unwrap_err();
        assert_eq!(error.variable, ENV_BASE_DELAY_MS);
    }

    #[test]
    fn the_escalated_limit_is_chosen_per_model_and_overridden_for_all() {
        let policy = RecoveryPolicy::default();
        for (model, limit) in [
            ("claude-opus-4-20250514", 32_000),
            ("claude-opus-4-0", 32_000),
            ("us.anthropic.claude-opus-4-1-20250805-v1:0", 32_000),
            ("claude-opus-4-5", 64_000),
            ("claude-sonnet-4-5", 64_000),
            ("qwen2.5-coder", 64_000),
        ] {
            assert_eq!(policy.escalated_max_tokens_for(model), limit, "{model}");
        }
        // The longest key wins.
        let mut table = policy.clone();
        table
            .escalated_max_tokens_by_model
            .insert("claude-opus-4-1-2025".into(), 16_000);
        assert_eq!(
            table.escalated_max_tokens_for("claude-opus-4-1-20250805"),
            16_000
        );
        assert_eq!(table.escalated_max_tokens_for("claude-opus-4-1"), 32_000);

        let local = RecoveryPolicy::from_lookup(|name| {
            (name == ENV_ESCALATED_MAX_TOKENS).then(|| "16_384".to_string())
        })
        .unwrap();
        assert_eq!(local.escalated_max_tokens_for("claude-opus-4-1"), 16_384);
        assert_eq!(local.escalated_max_tokens_for("qwen2.5-coder"), 16_384);
        for bad in ["0", "lots"] {
            let error = RecoveryPolicy::from_lookup(|name| {
                (name == ENV_ESCALATED_MAX_TOKENS).then(|| bad.to_string())
            })
            .unwrap_err();
            assert_eq!(error.variable, ENV_ESCALATED_MAX_TOKENS);
        }
    }
}
