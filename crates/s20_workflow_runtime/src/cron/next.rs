//! When does an expression fire next?
//!
//! Two questions hide in that one, and this file keeps them apart:
//!
//! 1. **Calendar:** which local minute (a civil date and time, with no time
//!    zone) is the first one after a given local minute that the expression
//!    matches? That is [`CronExpr::next_match`], a plain search over the
//!    calendar: skip whole months that do not match, then whole days, then
//!    use the hour and minute bit sets to jump straight to the first
//!    matching time of day. It never steps minute by minute, so even "the
//!    29th of February that is a Sunday" is found quickly.
//!
//! 2. **Time line:** at which real instant does the clock *reach* that local
//!    minute? Usually exactly once, but daylight saving time breaks that: a
//!    local minute inside a spring-forward gap is never shown, and one inside
//!    a fall-back fold is shown twice. The helpers at the bottom of this file
//!    answer it with the rule described in the [module docs](super): each
//!    local minute belongs to the first instant at which the clock shows that
//!    minute or a later one, and local minutes that the clock has already
//!    passed once are not due again.
//!
//! The [`Schedule`](super::Schedule) uses the same helpers, which is what
//! makes its `tick` and `next_fire` agree with [`CronExpr::next_after`].

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};

use super::expr::CronExpr;

/// How far ahead the calendar search looks before giving up.
///
/// The Gregorian calendar repeats exactly every 400 years (weekdays
/// included), so a search that finds nothing in 401 years would find
/// nothing ever. Parsing already rejects expressions that can never fire,
/// so in practice the bound only stops the search at the end of the
/// calendar (year 9999). It is large because some valid expressions are
/// rare: `0 0 29 2 */7` needs a 29th of February that is also a Sunday,
/// which can be 40 years away.
const SEARCH_YEARS: i16 = 401;

/// How far back [`CronExpr::next_after`] looks to learn which local minutes
/// the clock has already shown. Clocks are set back by an hour for daylight
/// saving time, and even the largest changes made to time zones' clocks
/// were about a day, so two days is ample.
const LOOK_BACK: SignedDuration = SignedDuration::from_hours(48);

/// One minute in nanoseconds, the unit of [`Timestamp::as_nanosecond`].
const MINUTE_NANOS: i128 = 60_000_000_000;

impl CronExpr {
    /// The first minute mark strictly after `after` at which this expression
    /// fires, in `after`'s time zone.
    ///
    /// Local time and daylight saving time are handled as the
    /// [module docs](super) describe: a time skipped by a spring-forward
    /// change fires at the first instant after the gap (so `30 2 * * *` fires
    /// at 03:00 on that day), and the minutes of a repeated fall-back hour
    /// count as already passed the second time round. This gives the same
    /// answer as a [`Schedule`](super::Schedule) that has been ticking every
    /// minute up to `after`.
    ///
    /// Returns `None` only when no fire time exists before the end of the
    /// calendar that `jiff` supports.
    pub fn next_after(&self, after: &ZonedDateTime) -> Option<ZonedDateTime> {
        // ANCHOR: exercise-s14-next
        let tz = after.time_zone();
        let now = after.timestamp();
        // The latest local minute the clock has shown so far. Right after a
        // fall-back change that is the end of the first pass through the
        // repeated hour, not the (earlier) time the clock shows now.
        let since = now.saturating_sub(LOOK_BACK).unwrap_or(now);
        let reached = latest_local_minute(tz, since, now).unwrap_or_else(|| local_minute(tz, now));
        next_fire_from(self, tz, reached, now)
        // ANCHOR_END: exercise-s14-next
    }

    /// The first local minute strictly after `after`'s minute that the
    /// expression matches, by the calendar alone (no time zone involved).
    pub(crate) fn next_match(&self, after: DateTime) -> Option<DateTime> {
        let mut date = after.date();
        let last_year = date.year().saturating_add(SEARCH_YEARS);
        // On the first day the search starts one minute after `after`; on
        // every later day it starts at midnight. Minute 60 is fine here: no
        // minute matches it, so the search simply moves on to the next hour
        // (and hour 24 to the next day).
        let mut from = (small(after.hour()), small(after.minute()) + 1);
        while date.year() <= last_year {
            if !self.month_matches(date) {
                date = first_of_next_month(date)?;
                from = (0, 0);
                continue;
            }
            if self.date_matches(date)
                && let Some((hour, minute)) = self.first_time_at_or_after(from.0, from.1)
            {
                let time = Time::new(i8::try_from(hour).ok()?, i8::try_from(minute).ok()?, 0, 0);
                return time.ok().map(|time| date.to_datetime(time));
            }
            date = date.tomorrow().ok()?;
            from = (0, 0);
        }
        None
    }
}

/// The next fire instant strictly after `after`, given that the clock has
/// already shown every local minute up to and including `reached`.
///
/// Finds the first matching local minute after `reached`, then the first
/// instant after `after` at which the clock reaches it.
pub(crate) fn next_fire_from(
    expr: &CronExpr,
    tz: &TimeZone,
    reached: DateTime,
    after: Timestamp,
) -> Option<ZonedDateTime> {
    let mut floor = reached;
    // A matching minute that the clock can no longer reach after `after`
    // (possible only in contrived time zones) is skipped in favour of the
    // next one. A handful of tries is plenty; the bound keeps this finite.
    for _ in 0..8 {
        let minute = expr.next_match(floor)?;
        if let Some(instant) = first_instant_reaching(tz, minute, after) {
            return Some(instant.to_zoned_datetime(tz.clone()));
        }
        floor = minute;
    }
    None
}

/// The start of the UTC minute that contains `at`. Fire times are always
/// such minute marks.
pub(crate) fn minute_floor(at: Timestamp) -> Timestamp {
    let nanos = at.as_nanosecond();
    Timestamp::from_nanosecond(nanos - nanos.rem_euclid(MINUTE_NANOS)).unwrap_or(at)
}

/// The first UTC minute mark at or after `at`.
fn minute_ceil(at: Timestamp) -> Timestamp {
    let floor = minute_floor(at);
    if floor == at {
        at
    } else {
        floor
            .checked_add(SignedDuration::from_mins(1))
            .unwrap_or(at)
    }
}

/// The local minute the clock shows at `at`, with seconds dropped.
pub(crate) fn local_minute(tz: &TimeZone, at: Timestamp) -> DateTime {
    truncate_to_minute(tz.to_datetime(minute_floor(at)))
}

/// The latest local minute the clock shows at any minute mark in the real
/// time interval (`after`, `upto`], or `None` if the interval holds no
/// minute mark.
///
/// Local time only ever moves forward between time zone transitions, so the
/// latest minute is either the one at `upto` or the one just before some
/// transition in the interval (the end of a first pass through a repeated
/// hour). Checking those few instants gives the same answer as converting
/// every minute mark in the interval, however long it is.
pub(crate) fn latest_local_minute(
    tz: &TimeZone,
    after: Timestamp,
    upto: Timestamp,
) -> Option<DateTime> {
    let last = minute_floor(upto);
    if last <= after {
        return None;
    }
    let mut latest = local_minute(tz, last);
    // The usual case, a tick every minute: `last` is the only minute mark
    // in the interval, so there is nothing else to compare with.
    if last
        .checked_sub(SignedDuration::from_mins(1))
        .is_ok_and(|before| before <= after)
    {
        return Some(latest);
    }
    let just_after_last = last.checked_add(SignedDuration::from_nanos(1)).ok()?;
    for transition in tz.preceding(just_after_last) {
        // The last minute mark before the transition took effect.
        let before = transition
            .timestamp()
            .checked_sub(SignedDuration::from_nanos(1))
            .map(minute_floor)
            .ok()?;
        if before <= after {
            break;
        }
        latest = latest.max(local_minute(tz, before));
    }
    Some(latest)
}

/// The first minute mark strictly after `after` at which the clock shows
/// `minute` or a later local time, if the clock shows `minute` at all after
/// `after` (a minute in a repeated hour may already be behind us twice).
fn first_instant_reaching(tz: &TimeZone, minute: DateTime, after: Timestamp) -> Option<Timestamp> {
    let candidates = match tz.to_ambiguous_timestamp(minute).offset() {
        AmbiguousOffset::Unambiguous { offset } => [offset.to_timestamp(minute).ok(), None],
        // A minute in a spring-forward gap is never shown. The clock first
        // passes it at the jump itself. Reading the minute with the new
        // offset gives an instant shortly before the jump, so the next
        // transition after that instant is the jump.
        AmbiguousOffset::Gap { after: new, .. } => {
            let before_jump = new.to_timestamp(minute).ok()?;
            let jump = tz.following(before_jump).next().map(|t| t.timestamp());
            [jump, None]
        }
        // A minute in a fall-back fold is shown twice; take the first
        // showing that is still ahead of us.
        AmbiguousOffset::Fold { before, after: new } => [
            before.to_timestamp(minute).ok(),
            new.to_timestamp(minute).ok(),
        ],
    };
    candidates
        .into_iter()
        .flatten()
        .map(minute_ceil)
        .find(|instant| *instant > after)
}

/// `at` with seconds and smaller units set to zero. (They are already
/// zero unless the time zone's offset has seconds, as some historical
/// offsets do, so the cheap check comes first.)
fn truncate_to_minute(at: DateTime) -> DateTime {
    if at.second() == 0 && at.subsec_nanosecond() == 0 {
        return at;
    }
    at.with()
        .second(0)
        .subsec_nanosecond(0)
        .build()
        .unwrap_or(at)
}

/// The first day of the month after `date`'s.
fn first_of_next_month(date: Date) -> Option<Date> {
    let (year, month) = match date.month() {
        12 => (date.year().checked_add(1)?, 1),
        month => (date.year(), month + 1),
    };
    Date::new(year, month, 1).ok()
}

/// Converts an hour or minute (always 0-59) from `jiff`'s `i8` to `u8`.
fn small(value: i8) -> u8 {
    u8::try_from(value).unwrap_or(0)
}
