//! Cron: running a prompt on a schedule.
//!
//! The agent can schedule a prompt to run later ("every weekday at 9:00,
//! summarise new issues"). The schedule is written as a classic 5-field
//! cron expression:
//!
//! ```text
//! ┌───────── minute        0-59
//! │ ┌─────── hour          0-23
//! │ │ ┌───── day of month  1-31
//! │ │ │ ┌─── month         1-12 or JAN-DEC
//! │ │ │ │ ┌─ day of week   0-7 or SUN-SAT (0 and 7 are both Sunday)
//! │ │ │ │ │
//! 0 9 * * MON-FRI
//! ```
//!
//! Each field is `*` (every value), a number, a range `N-M`, a stepped
//! range `*/S` or `N-M/S`, or a comma list of those. The shortcuts
//! `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight` and
//! `@hourly` stand for the usual expressions. Day of month and day of week
//! combine as in Vixie cron: when either field starts with `*`, a day must
//! match both; when both are restricted, a day matching either is enough.
//!
//! # Local time and daylight saving time
//!
//! Expressions are read in local time (the time zone of the `now` passed
//! in), because "9:00" means 9:00 on the wall clock. Time itself is walked
//! as real instants, one per UTC minute, each converted to the local time
//! it shows. The rules:
//!
//! - **A job fires at most once per local minute, and its local minutes
//!   only move forward.** It fires for a local minute only if that minute
//!   is later than the last local minute it fired for, and later than every
//!   local minute the clock has already shown.
//! - **Late ticks collapse.** A tick considers every minute since the
//!   previous tick (a busy process or a suspended laptop can make ticks
//!   late or irregular). All the minutes a job missed make it fire *once*
//!   at this tick, never in a burst. The very first tick looks only at its
//!   own minute.
//! - **Spring forward** (say 02:00 jumps to 03:00): the local minutes the
//!   clock skips belong to the first instant after the jump. A job set for
//!   02:30 fires once, at 03:00, that day, rather than not at all.
//! - **Fall back** (01:00-01:59 shown twice): the second pass through the
//!   repeated hour shows only local minutes the clock has already shown, so
//!   by the first rule nothing fires in it. A job for 01:30 fires once, in
//!   the first pass. This is a deliberate choice with a cost: a frequent job
//!   such as `*/5 * * * *` pauses for the repeated hour (no firing between
//!   01:55 in the first pass and 02:00 in the second). Vixie cron differs
//!   here: it runs wildcard jobs like that through both passes.
//!
//! [`CronExpr::next_after`] and [`Schedule::next_fire`] follow the same
//! rules, so the time they predict is the time at which `tick` fires.
//!
//! # Where to start reading
//!
//! 1. `field.rs` parses one field into the set of values it
//!    matches, and defines [`CronError`];
//! 2. `expr.rs` puts five fields together into [`CronExpr`];
//! 3. `next.rs` finds the next fire time, first on the calendar
//!    and then on the real time line;
//! 4. `schedule.rs` holds the jobs and decides which are due
//!    at each [`Schedule::tick`];
//! 5. `job.rs`, `store.rs` and `clock.rs` are the
//!    supporting pieces: the job record, saving durable jobs, and an
//!    injectable clock for tests.

mod clock;
mod expr;
mod field;
mod job;
mod next;
mod schedule;
pub mod scheduler;
pub mod store;
pub mod tools;

pub use clock::{Clock, ManualClock, StartedClock, SystemClock};
pub use expr::CronExpr;
pub use field::CronError;
pub use job::CronJob;
pub use schedule::Schedule;
pub use scheduler::CronScheduler;
