//! The randomness behind the jitter: a tiny xorshift generator.
//!
//! Jitter needs numbers that differ between clients, not numbers an
//! attacker cannot guess, so a few lines of xorshift do instead of a crate.
//! Production seeds it from the clock; tests give it a fixed seed, and then
//! every delay is known in advance.

use std::time::{SystemTime, UNIX_EPOCH};

// ANCHOR: xorshift
/// Marsaglia's xorshift64: fast, small, and good enough to spread retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XorShift {
    state: u64,
}

impl XorShift {
    /// A generator that always produces the same sequence for `seed`. Zero,
    /// the one state xorshift cannot leave, is replaced by a fixed constant.
    pub fn new(seed: u64) -> Self {
        let state = if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        };
        Self { state }
    }

    /// A generator seeded from the clock and the process id, so two agents
    /// started together still draw different delays.
    pub fn from_time() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos() as u64)
            .unwrap_or_default();
        Self::new(nanos ^ (u64::from(std::process::id()) << 32))
    }

    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    /// A number from `0` to `max`, both included.
    pub fn up_to(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(bound) => self.next_u64() % bound,
            None => self.next_u64(),
        }
    }
}
// ANCHOR_END: xorshift
