//! How long to wait before the next attempt.
//!
//! Exponential backoff: the wait doubles after every failed attempt, from
//! [`RecoveryPolicy::base_delay`] up to [`RecoveryPolicy::max_delay`], so a
//! struggling provider gets more and more room. Jitter adds up to a quarter
//! on top, at random, so that clients that failed at the same moment do not
//! come back at the same moment. When the server says when to come back
//! (`retry-after`), that wins, within [`RecoveryPolicy::max_retry_after`].
//!
//! All delays are whole milliseconds, so a test with paused time can assert
//! them exactly.

use std::fmt;
use std::time::Duration;

use super::jitter::XorShift;
use super::policy::RecoveryPolicy;

/// Where a wait came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelaySource {
    /// Computed: exponential backoff plus jitter.
    Backoff,
    /// The server's `retry-after` header.
    RetryAfter,
}

/// A wait before the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delay {
    pub duration: Duration,
    pub source: DelaySource,
}

// ANCHOR: backoff
/// The wait after failed attempt number `failed` (0 for the first failure),
/// before jitter: `min(base · 2^failed, max)`.
pub fn backoff(policy: &RecoveryPolicy, failed: u32) -> Duration {
    // ANCHOR: exercise-s11-backoff
    let base = millis(policy.base_delay);
    let factor = 1u64.checked_shl(failed).unwrap_or(u64::MAX);
    let delay = base.saturating_mul(factor).min(millis(policy.max_delay));
    Duration::from_millis(delay)
    // ANCHOR_END: exercise-s11-backoff
}

/// [`backoff`] plus a random `0..=max_jitter_percent` % of it.
pub fn with_jitter(policy: &RecoveryPolicy, failed: u32, rng: &mut XorShift) -> Duration {
    let base = millis(backoff(policy, failed));
    let most = base.saturating_mul(u64::from(policy.max_jitter_percent)) / 100;
    Duration::from_millis(base.saturating_add(rng.up_to(most)))
}

/// The wait before the next attempt: the server's `retry-after` when it
/// sent one (capped), else backoff with jitter.
pub fn retry_delay(
    policy: &RecoveryPolicy,
    failed: u32,
    retry_after: Option<Duration>,
    rng: &mut XorShift,
) -> Delay {
    match retry_after {
        Some(asked) => Delay {
            duration: asked.min(policy.max_retry_after),
            source: DelaySource::RetryAfter,
        },
        None => Delay {
            duration: with_jitter(policy, failed, rng),
            source: DelaySource::Backoff,
        },
    }
}
// ANCHOR_END: backoff

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl fmt::Display for Delay {
    /// `750ms`, `1.1s`, and `(retry-after)` when the server chose it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = millis(self.duration);
        if millis < 1000 {
            write!(f, "{millis}ms")?;
        } else {
            write!(f, "{:.1}s", self.duration.as_secs_f64())?;
        }
        if self.source == DelaySource::RetryAfter {
            f.write_str(" (retry-after)")?;
        }
        Ok(())
    }
}
