//! The scheduling state: which jobs exist and which of them are due.
//!
//! This is deliberately pure: no threads, no timers, no reading the clock.
//! Whoever drives it (a scheduler task, or a test with a
//! [`ManualClock`](super::ManualClock)) passes the current time to
//! [`Schedule::tick`] and gets back the jobs that are due. That makes every
//! rule below testable in microseconds, including daylight saving changes
//! that happen twice a year and a laptop that sleeps for three hours.
//!
//! The rules themselves are stated in the [module docs](super).

use std::time::Duration;

use jiff::civil::DateTime;
use jiff::{Timestamp, ZonedDateTime};

use super::expr::CronExpr;
use super::field::CronError;
use super::job::CronJob;
use super::next::{latest_local_minute, local_minute, minute_floor, next_fire_from};

/// Jobs and what the schedule remembers about time.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    /// In the order they were added, so listings are stable.
    entries: Vec<Entry>,
    /// The number in the next generated id (`cron_0001` is number 1).
    next_number: u32,
    /// The last minute mark a tick has looked at.
    walked_to: Option<Timestamp>,
    /// The latest local minute any tick has reached. Ticks only consider
    /// local minutes after this one, which is what stops a repeated
    /// fall-back hour from firing jobs a second time.
    reached: Option<DateTime>,
}

/// A job with its parsed expression and firing history.
#[derive(Debug, Clone)]
struct Entry {
    job: CronJob,
    expr: CronExpr,
    /// The local minute of the tick at which the job last fired.
    last_fired: Option<DateTime>,
}

/// The local minutes one tick considers.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// Minutes after this one, or, when `None` (the first tick, or the
    /// first after the clock was set back), only `newest` itself.
    after: Option<DateTime>,
    /// The latest local minute shown by the clock since the previous tick.
    newest: DateTime,
}

impl Schedule {
    /// An empty schedule whose first generated id is `cron_0001`.
    pub fn new() -> Schedule {
        Schedule::default()
    }

    /// Adds a job and returns it as stored (with its id).
    ///
    /// A job with an empty id gets the next free one (`cron_0001`,
    /// `cron_0002`, ...). A job that already has an id (one loaded from the
    /// [`store`](super::store)) keeps it, and generated ids continue after
    /// the highest such id, so they never collide.
    ///
    /// # Errors
    ///
    /// Returns the parse error if the job's cron expression is invalid, or
    /// [`CronError::DuplicateId`] if a job with the same id is already
    /// scheduled. Nothing is added in either case.
    pub fn add(&mut self, mut job: CronJob) -> Result<CronJob, CronError> {
        let expr = job.expr()?;
        if job.id.is_empty() {
            job.id = format!("cron_{:04}", self.next_number.max(1));
        }
        if self.get(&job.id).is_some() {
            return Err(CronError::DuplicateId { id: job.id });
        }
        if let Some(number) = id_number(&job.id) {
            self.next_number = self.next_number.max(number.saturating_add(1));
        }
        self.entries.push(Entry {
            job: job.clone(),
            expr,
            last_fired: None,
        });
        Ok(job)
    }

    /// Makes the ids generated from now on continue after every id in
    /// `taken`: the ids another session saved, so that no two jobs in one
    /// workspace ever share one.
    pub fn continue_after<'a>(&mut self, taken: impl IntoIterator<Item = &'a str>) {
        for number in taken.into_iter().filter_map(id_number) {
            self.next_number = self.next_number.max(number.saturating_add(1));
        }
    }

    /// Removes the job with this id and returns it, or `None` if there is
    /// no such job.
    pub fn cancel(&mut self, id: &str) -> Option<CronJob> {
        let index = self.entries.iter().position(|e| e.job.id == id)?;
        Some(self.entries.remove(index).job)
    }

    /// The job with this id, if any.
    pub fn get(&self, id: &str) -> Option<&CronJob> {
        self.entries.iter().find(|e| e.job.id == id).map(|e| &e.job)
    }

    /// All jobs, in the order they were added.
    pub fn jobs(&self) -> impl Iterator<Item = &CronJob> {
        self.entries.iter().map(|e| &e.job)
    }

    /// The durable jobs, ready for [`store::save`](super::store::save).
    pub fn durable_jobs(&self) -> Vec<CronJob> {
        self.jobs().filter(|job| job.durable).cloned().collect()
    }

    /// How many jobs there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no jobs.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    // ANCHOR: tick
    /// Returns the jobs that are due at `now`, in the order they were
    /// added, and removes the one-shot jobs among them.
    ///
    /// Every minute mark since the previous tick is taken into account, so
    /// ticks may come late or irregularly; a job that missed several of its
    /// minutes fires once, not once per missed minute. The first tick looks
    /// only at `now`'s own minute. Ticking twice within one minute fires
    /// nothing the second time. Local time is `now`'s time zone.
    pub fn tick(&mut self, now: &ZonedDateTime) -> Vec<CronJob> {
        // ANCHOR: exercise-s14-tick
        let Some(window) = self.window(now) else {
            return Vec::new();
        };
        let mut due = Vec::new();
        self.entries.retain_mut(|entry| {
            if !entry.is_due(window) {
                return true;
            }
            entry.last_fired = Some(window.newest);
            due.push(entry.job.clone());
            entry.job.recurring
        });
        self.walked_to = Some(minute_floor(now.timestamp()));
        self.reached = Some(match window.after {
            Some(after) => after.max(window.newest),
            None => window.newest,
        });
        due
        // ANCHOR_END: exercise-s14-tick
    }
    // ANCHOR_END: tick

    /// The next minute mark strictly after `now` at which `tick` will fire
    /// the job with this id, if ticks come at least once a minute. `None`
    /// if there is no such job, or it will never fire again.
    ///
    /// `now` is normally the time just passed to `tick`. If the schedule
    /// has not been ticked up to `now`, the minutes in between are treated
    /// as already looked at.
    pub fn next_fire(&self, id: &str, now: &ZonedDateTime) -> Option<ZonedDateTime> {
        let entry = self.entries.iter().find(|e| e.job.id == id)?;
        // Everything the clock has shown up to `now` counts as reached, and
        // so does the job's own last firing (which matters only after the
        // clock has been set back).
        let pending = self.window(now).map(|w| w.newest);
        let reached = [self.reached, pending, entry.last_fired]
            .into_iter()
            .flatten()
            .max()?;
        next_fire_from(&entry.expr, now.time_zone(), reached, now.timestamp())
    }

    /// How long from `now` until the next minute mark, when the next tick
    /// is worth doing. A scheduler task sleeps this long between ticks. At
    /// an exact minute mark it is a full minute, because that mark is the
    /// one just ticked.
    pub fn until_next_minute(now: &ZonedDateTime) -> Duration {
        const MINUTE: u64 = 60_000_000_000;
        let into_minute = now
            .timestamp()
            .as_nanosecond()
            .rem_euclid(i128::from(MINUTE));
        Duration::from_nanos(MINUTE - u64::try_from(into_minute).unwrap_or(0))
    }

    /// The local minutes a tick at `now` would consider, or `None` if no
    /// minute mark has passed since the previous tick.
    fn window(&self, now: &ZonedDateTime) -> Option<Window> {
        let tz = now.time_zone();
        let now_mark = minute_floor(now.timestamp());
        match self.walked_to {
            Some(previous) if previous == now_mark => None,
            Some(previous) if previous < now_mark => Some(Window {
                after: self.reached,
                newest: latest_local_minute(tz, previous, now_mark)?,
            }),
            // The first tick, or the clock was set back before the previous
            // tick: start afresh from `now`'s own minute. Each job's
            // `last_fired` still stops it from repeating a minute.
            _ => Some(Window {
                after: None,
                newest: local_minute(tz, now_mark),
            }),
        }
    }
}

impl Entry {
    // ANCHOR: is_due
    /// Whether the job has a matching local minute in `window` that is
    /// later than the minute it last fired at.
    fn is_due(&self, window: Window) -> bool {
        match window.after {
            None => {
                self.expr.matches(window.newest)
                    && self.last_fired.is_none_or(|last| last < window.newest)
            }
            Some(after) => {
                let floor = self.last_fired.map_or(after, |last| last.max(after));
                self.expr
                    .next_match(floor)
                    .is_some_and(|minute| minute <= window.newest)
            }
        }
    }
    // ANCHOR_END: is_due
}

/// The number in an id of the form `cron_NNNN`, if it has that form.
fn id_number(id: &str) -> Option<u32> {
    let digits = id.strip_prefix("cron_")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
