//! A whole cron expression: five fields, and the rule that decides whether
//! a local date and time matches them.
//!
//! Parsing happens once, when a job is created, so that a bad expression is
//! reported to whoever wrote it instead of silently never firing. That is
//! also why an expression that is well-formed but can never fire (such as
//! "the 30th of February") is rejected here.

use std::fmt;
use std::str::FromStr;

use jiff::civil::{Date, DateTime};

use super::field::{CronError, Field, FieldKind};

/// A parsed five-field cron expression.
///
/// The fields are, in order: minute (0-59), hour (0-23), day of the month
/// (1-31), month (1-12 or `JAN`-`DEC`) and day of the week (0-7 or
/// `SUN`-`SAT`, where both 0 and 7 mean Sunday).
///
/// Day of the month and day of the week combine the way Vixie cron combines
/// them: if either field is written starting with `*`, a day must match
/// both; otherwise a day matching either one is enough. So `0 9 1 * MON`
/// fires on the first of every month *and* on every Monday, while
/// `0 9 */2 * MON` fires only on Mondays with an odd day number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    /// The expression as written, trimmed and single-spaced.
    text: String,
    minute: Field,
    hour: Field,
    day_of_month: Field,
    month: Field,
    day_of_week: Field,
}

/// Shortcuts and the five-field expressions they stand for.
const SHORTCUTS: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// The most days each month can have. February counts 29 because a leap
/// year will always come, so `0 0 29 2 *` does fire (every four years or so).
const MAX_DAYS: [u8; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

impl CronExpr {
    /// Parses an expression such as `*/15 9-17 * * MON-FRI` or `@daily`.
    ///
    /// # Errors
    ///
    /// Returns a [`CronError`] naming the field, the text and the reason
    /// when the expression is malformed, or when it can never fire.
    pub fn parse(text: &str) -> Result<CronExpr, CronError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let written = words.join(" ");

        let fields_text = match words.as_slice() {
            [single] if single.starts_with('@') => SHORTCUTS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(single))
                .map(|(_, fields)| *fields)
                .ok_or_else(|| CronError::UnknownShortcut {
                    text: single.to_string(),
                })?,
            _ => written.as_str(),
        };

        let texts: Vec<&str> = fields_text.split(' ').collect();
        let [minute, hour, day_of_month, month, day_of_week] = texts.as_slice() else {
            return Err(CronError::FieldCount { found: words.len() });
        };

        let expr = CronExpr {
            text: written.clone(),
            minute: Field::parse(FieldKind::Minute, minute)?,
            hour: Field::parse(FieldKind::Hour, hour)?,
            day_of_month: Field::parse(FieldKind::DayOfMonth, day_of_month)?,
            month: Field::parse(FieldKind::Month, month)?,
            day_of_week: Field::parse(FieldKind::DayOfWeek, day_of_week)?,
        };

        if !expr.can_fire() {
            return Err(CronError::NeverFires {
                day_of_month: day_of_month.to_string(),
                month: month.to_string(),
            });
        }
        Ok(expr)
    }

    /// Whether the expression matches this local date and time. Seconds and
    /// smaller units are ignored: cron works in whole minutes.
    pub fn matches(&self, at: DateTime) -> bool {
        let (Ok(minute), Ok(hour)) = (u8::try_from(at.minute()), u8::try_from(at.hour())) else {
            return false;
        };
        self.minute.contains(minute) && self.hour.contains(hour) && self.date_matches(at.date())
    }

    /// Whether the expression matches this local date (month and day
    /// fields only).
    pub(crate) fn date_matches(&self, date: Date) -> bool {
        self.month_matches(date) && self.day_matches(date)
    }

    /// Whether the month field matches the month of `date`.
    pub(crate) fn month_matches(&self, date: Date) -> bool {
        u8::try_from(date.month()).is_ok_and(|m| self.month.contains(m))
    }

    /// The first matching time of day (hour and minute) at or after
    /// `hour:minute`, on a day that matches. `minute` may be 60, meaning
    /// "from the next hour". The bit sets let it jump straight from one
    /// matching hour to the next.
    pub(crate) fn first_time_at_or_after(&self, hour: u8, minute: u8) -> Option<(u8, u8)> {
        let mut candidate = self.hour.first_at_or_after(hour)?;
        while candidate <= 23 {
            let from_minute = if candidate == hour { minute } else { 0 };
            if let Some(found) = self.minute.first_at_or_after(from_minute) {
                return Some((candidate, found));
            }
            candidate = self.hour.first_at_or_after(candidate + 1)?;
        }
        None
    }

    // ANCHOR: day_rule
    /// The Vixie day rule, described on [`CronExpr`].
    fn day_matches(&self, date: Date) -> bool {
        let by_day_of_month = u8::try_from(date.day()).is_ok_and(|d| self.day_of_month.contains(d));
        let by_weekday = u8::try_from(date.weekday().to_sunday_zero_offset())
            .is_ok_and(|w| self.day_of_week.contains(w));
        if self.day_of_month.starts_with_star() || self.day_of_week.starts_with_star() {
            by_day_of_month && by_weekday
        } else {
            by_day_of_month || by_weekday
        }
    }
    // ANCHOR_END: day_rule

    /// Whether some date can ever match.
    ///
    /// When day-of-week is restricted (does not start with `*`), every week
    /// has a matching weekday, so the OR rule always finds days. When it
    /// starts with `*`, days must match the day-of-month field, and that can
    /// be impossible: no month among the chosen ones has a 30th of February,
    /// or a 31st of April. If both a day and a month fit together, that date
    /// falls on every weekday over the years, so the weekday part (which
    /// always contains Sunday when written as `*` or `*/N`) cannot make it
    /// impossible again.
    fn can_fire(&self) -> bool {
        if !self.day_of_week.starts_with_star() {
            return true;
        }
        (1u8..=12).filter(|m| self.month.contains(*m)).any(|month| {
            let last_day = MAX_DAYS[usize::from(month - 1)];
            (1..=last_day).any(|day| self.day_of_month.contains(day))
        })
    }
}

impl fmt::Display for CronExpr {
    /// Writes the expression as it was written (trimmed, single-spaced), so
    /// that a job shows its schedule in the user's own words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for CronExpr {
    type Err = CronError;

    fn from_str(text: &str) -> Result<CronExpr, CronError> {
        CronExpr::parse(text)
    }
}
