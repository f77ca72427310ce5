//! When a memory was written: a UTC time to the second, stored in the
//! memory file's `updated:` field as RFC 3339 (`2025-03-14T09:26:53Z`).
//!
//! Consolidation needs it. Its prompt lists the memories oldest first and
//! asks for contradictions to be resolved in favour of the more recent
//! statement; without a date per memory "oldest" could only mean "first
//! by file name". The standard library has the clock but no calendar, and
//! a date crate would be a dependency for two short functions, so the
//! conversion between seconds and calendar dates is written out here.
//!
//! The store reads the time from a [`Clock`], which tests replace.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

const SECONDS_PER_DAY: i64 = 86_400;

// ANCHOR: timestamp
/// A moment in UTC, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z.
    seconds: i64,
}

impl Timestamp {
    /// The moment `seconds` after 1970-01-01T00:00:00Z.
    pub fn from_unix_seconds(seconds: i64) -> Self {
        Self { seconds }
    }

    /// `time`, to the second. A clock set before 1970 reads as 1970.
    pub fn from_system_time(time: SystemTime) -> Self {
        let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        });
        Self { seconds }
    }

    /// Seconds since 1970-01-01T00:00:00Z.
    pub fn unix_seconds(self) -> i64 {
        self.seconds
    }

    /// Reads an RFC 3339 time as a person or another tool may write it:
    /// `2025-03-14T09:26:53Z`, with `t`/`z` or a space for the `T`,
    /// fractions of a second (dropped), an offset such as `+01:00`, or a
    /// bare date (`2025-03-14`, midnight UTC). Anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let days = parse_date(text.get(..10)?)?;
        let rest = &text[10..];
        if rest.is_empty() {
            return Some(Self::from_unix_seconds(days * SECONDS_PER_DAY));
        }
        let rest = rest.strip_prefix(['T', 't', ' '])?;
        let second_of_day = parse_time(rest.get(..8)?)?;
        let mut zone = &rest[8..];
        if let Some(fraction) = zone.strip_prefix('.') {
            zone = fraction.trim_start_matches(|c: char| c.is_ascii_digit());
        }
        let offset = parse_offset(zone)?;
        Some(Self::from_unix_seconds(
            days * SECONDS_PER_DAY + second_of_day - offset,
        ))
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC: `2025-03-14T09:26:53Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.seconds.div_euclid(SECONDS_PER_DAY);
        let second_of_day = self.seconds.rem_euclid(SECONDS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            second_of_day / 3_600,
            second_of_day % 3_600 / 60,
            second_of_day % 60
        )
    }
}
// ANCHOR_END: timestamp

/// `2025-03-14` as days since 1970-01-01.
fn parse_date(date: &str) -> Option<i64> {
    let [year, month, day] = fields(date, '-', [4, 2, 2])?;
    days_from_civil(year, month, day)
}

/// `09:26:53` as seconds since midnight (a leap second reads as `:59`).
fn parse_time(time: &str) -> Option<i64> {
    let [hour, minute, second] = fields(time, ':', [2, 2, 2])?;
    (hour < 24 && minute < 60 && second <= 60).then(|| hour * 3_600 + minute * 60 + second.min(59))
}

/// `Z` as 0, `+01:00` as 3,600 and `-04:30` as -16,200 seconds.
fn parse_offset(zone: &str) -> Option<i64> {
    if zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = match zone.get(..1)? {
        "+" => 1,
        "-" => -1,
        _ => return None,
    };
    let [hours, minutes] = fields(&zone[1..], ':', [2, 2])?;
    (hours < 24 && minutes < 60).then(|| sign * (hours * 3_600 + minutes * 60))
}

/// Fields of exactly the given widths, digits only, between separators.
fn fields<const N: usize>(text: &str, separator: char, widths: [usize; N]) -> Option<[i64; N]> {
    let mut parts = text.split(separator);
    let mut values = [0; N];
    for (value, width) in values.iter_mut().zip(widths) {
        let part = parts.next()?;
        if part.len() != width || !part.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        *value = part.parse().ok()?;
    }
    parts.next().is_none().then_some(values)
}

/// Days since 1970-01-01 of a date in the proleptic Gregorian calendar, or
/// `None` if there is no such date (month 13, February 30).
///
/// The algorithm is Howard Hinnant's `days_from_civil`: counting years from
/// March makes the leap day the last day of the year, so every month but
/// February has a fixed offset, and 400-year eras repeat exactly.
fn days_from_civil(year: i64, month: i64, day: i64) -> Option<i64> {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let days_in_month = *month_days.get(usize::try_from(month - 1).ok()?)?;
    if day < 1 || day > days_in_month {
        return None;
    }
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

/// The date `days` after 1970-01-01: the inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

// ANCHOR: clock
/// Where the store gets the time it writes into a memory file. The system
/// clock in the agent; a clock of their own in tests, so a test can say
/// which memory is older without sleeping.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl Clock {
    /// The system's clock.
    pub fn system() -> Self {
        Self::new(SystemTime::now)
    }

    /// A clock that reads `now`.
    pub fn new(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        Self(Arc::new(now))
    }

    /// The time now, to the second.
    pub fn now(&self) -> Timestamp {
        Timestamp::from_system_time((self.0)())
    }
}
// ANCHOR_END: clock

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(text: &str) -> i64 {
        Timestamp::parse(text)
            .unwrap_or_else(|| panic!("{text:?} does not parse"))
            .unix_seconds()
    }

    #[test]
    fn formats_known_moments() {
        for (seconds, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z"),
            (1_741_944_413, "2025-03-14T09:26:53Z"),
            (4_102_444_800, "2100-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
        ] {
            assert_eq!(Timestamp::from_unix_seconds(seconds).to_string(), text);
            assert_eq!(at(text), seconds, "{text}");
        }
    }

    #[test]
    fn every_day_of_four_centuries_round_trips() {
        // 1900 to 2300: ordinary, leap, century and 400-year leap years.
        let start = at("1900-01-01");
        for day in 0..146_097 {
            let moment = Timestamp::from_unix_seconds(start + day * SECONDS_PER_DAY + 3_661);
            assert_eq!(Timestamp::parse(&moment.to_string()), Some(moment));
        }
    }

    #[test]
    fn reads_what_people_and_other_tools_write() {
        let moment = at("2025-03-14T09:26:53Z");
        assert_eq!(at("2025-03-14t09:26:53z"), moment);
        assert_eq!(at("2025-03-14 09:26:53Z"), moment);
        assert_eq!(at("  2025-03-14T09:26:53.123456Z "), moment);
        assert_eq!(at("2025-03-14T10:26:53+01:00"), moment);
        assert_eq!(at("2025-03-14T04:56:53-04:30"), moment);
        assert_eq!(at("2025-03-14"), at("2025-03-14T00:00:00Z"));
        for bad in [
            "",
            "yesterday",
            "2025-3-14",
            "2025-02-29",
            "2025-13-01",
            "2025-03-14T25:00:00Z",
            "2025-03-14T09:26:53",
            "2025-03-14T09:26:53+0100",
            "2025/03/14",
            "+025-03-14",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_clock_can_be_replaced() {
        let clock = Clock::new(|| UNIX_EPOCH + Duration::from_secs(1_741_944_413));
        assert_eq!(clock.now().to_string(), "2025-03-14T09:26:53Z");
        assert!(Clock::system().now() > clock.now());
    }
}
