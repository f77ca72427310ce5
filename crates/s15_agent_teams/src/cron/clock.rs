//! Where "now" comes from.
//!
//! A scheduler that calls `ZonedDateTime::now()` directly can only be tested
//! by waiting for real minutes to pass, and daylight saving changes cannot
//! be tested at all. So the code that needs the time asks a [`Clock`]
//! instead: in production a [`SystemClock`], in tests a [`ManualClock`] that
//! the test moves forward by hand, minute by minute or hours at a time. A
//! [`StartedClock`] runs at real speed from a chosen start, for trying a
//! schedule (or a daylight saving change) at the terminal without waiting
//! for the real date: the binary's `--pretend-now`.

use std::sync::Mutex;

use jiff::{SignedDuration, ZonedDateTime};
use shared::sync::LockExt;

/// A source of the current time, in some time zone.
///
/// It is `Send + Sync` so that one clock can be shared (for example in an
/// `Arc<dyn Clock>`) between a scheduler task and the code that reports
/// when jobs will fire.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> ZonedDateTime;
}

/// The real clock, in the system's time zone.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> ZonedDateTime {
        ZonedDateTime::now()
    }
}

/// A clock that only moves when told to. For tests.
///
/// The time sits behind a `Mutex` so that the clock can be shared by
/// reference between a test and the code under test, and moved through
/// `&self`.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<ZonedDateTime>,
}

impl ManualClock {
    /// A clock that reads `start` until it is moved.
    pub fn new(start: ZonedDateTime) -> ManualClock {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock to `now` (backwards too, to test a clock being
    /// corrected).
    pub fn set(&self, now: ZonedDateTime) {
        *self.lock() = now;
    }

    /// Moves the clock by `by` of real (elapsed) time, keeping its time
    /// zone. Crossing a daylight saving change therefore moves the local
    /// time by more or less than `by`, as a real clock would. The time
    /// stops at the end of the supported range rather than overflowing.
    pub fn advance(&self, by: SignedDuration) {
        let mut now = self.lock();
        *now = now.saturating_add(by);
    }

    /// Locks the time. A panic in another thread while it held the lock
    /// cannot have left a half-written `ZonedDateTime` behind (assignment
    /// is all-or-nothing), so a poisoned lock is safe to use as it is.
    fn lock(&self) -> std::sync::MutexGuard<'_, ZonedDateTime> {
        self.now.locked()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> ZonedDateTime {
        self.lock().clone()
    }
}

/// A clock that starts at a chosen time and then runs at real speed.
#[derive(Debug, Clone)]
pub struct StartedClock {
    start: ZonedDateTime,
    origin: std::time::Instant,
}

impl StartedClock {
    /// A clock that reads `start` now, and `start` plus the elapsed real
    /// time later.
    pub fn new(start: ZonedDateTime) -> StartedClock {
        StartedClock {
            start,
            origin: std::time::Instant::now(),
        }
    }
}

impl Clock for StartedClock {
    fn now(&self) -> ZonedDateTime {
        let elapsed =
            SignedDuration::try_from(self.origin.elapsed()).unwrap_or(SignedDuration::MAX);
        self.start.saturating_add(elapsed)
    }
}
