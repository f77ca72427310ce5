//! One field of a cron expression, and the error type for everything in this
//! module.
//!
//! A cron expression is five fields, and every field has the same shape: a
//! comma-separated list of items, where an item is `*`, `*/S`, `N`, `N-M` or
//! `N-M/S`. What differs between fields is only the range of allowed values
//! (0-59 for minutes, 1-12 for months, ...) and whether names such as `JAN`
//! or `MON` may stand in for numbers. So this file parses any field into the
//! same small structure: the set of values it matches, kept as the bits of a
//! `u64` (every range fits below 64), plus one fact about how it was written
//! that the day-of-month/day-of-week rule needs (see [`Field::starts_with_star`]).
//!
//! Errors are precise on purpose: an agent (or a person) who wrote a bad
//! expression should learn from the message alone which field is wrong, what
//! text was wrong in it, and why.

use thiserror::Error;

/// Everything that can go wrong while parsing a cron expression or adding a
/// job to a [`Schedule`](super::Schedule).
///
/// The messages name the field, the offending text and the reason, because
/// they are shown to whoever wrote the expression.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CronError {
    /// The expression does not have exactly five fields.
    #[error("expected 5 fields (minute hour day-of-month month day-of-week), found {found}")]
    FieldCount {
        /// How many whitespace-separated fields there were.
        found: usize,
    },

    /// An `@name` shortcut that is not one of the supported ones.
    #[error(
        "unknown shortcut \"{text}\" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"
    )]
    UnknownShortcut {
        /// The shortcut as written.
        text: String,
    },

    /// A comma list with an empty item, as in `1,,2` or `5,`.
    #[error("{field}: empty item in list \"{text}\"")]
    EmptyItem {
        /// The field's name, such as `minute`.
        field: &'static str,
        /// The whole field as written.
        text: String,
    },

    /// Text where a number (or, in some fields, a name) was expected.
    #[error("{field}: \"{text}\" is not {expected}")]
    NotAValue {
        /// The field's name.
        field: &'static str,
        /// The text that could not be read.
        text: String,
        /// What would have been accepted there.
        expected: &'static str,
    },

    /// Syntax that other cron dialects have but this one deliberately lacks.
    #[error("{field}: \"{text}\" is not supported (L, W, # and ? are Quartz extensions)")]
    Unsupported {
        /// The field's name.
        field: &'static str,
        /// The item as written.
        text: String,
    },

    /// A number outside the field's range.
    #[error("{field}: {value} is out of range {min}-{max}")]
    OutOfRange {
        /// The field's name.
        field: &'static str,
        /// The number as written (it may be too large for any integer type).
        value: String,
        /// The smallest value the field allows.
        min: u8,
        /// The largest value the field allows.
        max: u8,
    },

    /// A range whose start is after its end, such as `20-10`.
    #[error("{field}: range {text} is backwards")]
    Backwards {
        /// The field's name.
        field: &'static str,
        /// The range as written.
        text: String,
    },

    /// A step of zero, which would never advance.
    #[error("{field}: step 0 in \"{text}\" must be at least 1")]
    ZeroStep {
        /// The field's name.
        field: &'static str,
        /// The item as written.
        text: String,
    },

    /// A step on a single value, such as `5/15`. Some crons read that as
    /// "from 5 to the end"; others reject it. Being explicit avoids the doubt.
    #[error(
        "{field}: \"{text}\" steps from a single value; write a range such as \"{suggestion}\""
    )]
    StepWithoutRange {
        /// The field's name.
        field: &'static str,
        /// The item as written.
        text: String,
        /// The range form that probably was meant.
        suggestion: String,
    },

    /// A day of the month that none of the chosen months has, so the
    /// expression could never fire (for example `0 0 30 2 *`).
    #[error("can never fire: day-of-month \"{day_of_month}\" never occurs in month \"{month}\"")]
    NeverFires {
        /// The day-of-month field as written.
        day_of_month: String,
        /// The month field as written.
        month: String,
    },

    /// A job was added to a schedule that already has a job with its id.
    #[error("a job with id \"{id}\" is already scheduled")]
    DuplicateId {
        /// The id that is already taken.
        id: String,
    },
}

/// Which of the five fields a piece of text belongs to. It decides the range
/// of allowed values and which names are understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKind {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

/// Month names, in order, starting at month 1.
const MONTH_NAMES: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];

/// Weekday names, in order, starting at 0 for Sunday.
const WEEKDAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

impl FieldKind {
    /// The name used in error messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FieldKind::Minute => "minute",
            FieldKind::Hour => "hour",
            FieldKind::DayOfMonth => "day-of-month",
            FieldKind::Month => "month",
            FieldKind::DayOfWeek => "day-of-week",
        }
    }

    /// The smallest and largest value that may be written. Day-of-week
    /// allows 7 as well as 0 for Sunday, because both conventions exist.
    fn range(self) -> (u8, u8) {
        match self {
            FieldKind::Minute => (0, 59),
            FieldKind::Hour => (0, 23),
            FieldKind::DayOfMonth => (1, 31),
            FieldKind::Month => (1, 12),
            FieldKind::DayOfWeek => (0, 7),
        }
    }

    /// How an unreadable value is described in an error message.
    fn expected(self) -> &'static str {
        match self {
            FieldKind::Month => "a number or a month name (JAN-DEC)",
            FieldKind::DayOfWeek => "a number or a weekday name (SUN-SAT)",
            _ => "a number",
        }
    }

    /// Looks up a month or weekday name, ignoring case. `range_start` is
    /// given when `text` ends a range: `SUN` there means 7, so that `FRI-SUN`
    /// reads as Friday to Sunday rather than as a backwards range (but
    /// `SUN-SUN` stays just Sunday).
    fn named_value(self, text: &str, range_start: Option<u8>) -> Option<u8> {
        let (names, first): (&[&str], u8) = match self {
            FieldKind::Month => (&MONTH_NAMES, 1),
            FieldKind::DayOfWeek => (&WEEKDAY_NAMES, 0),
            _ => return None,
        };
        let index = names.iter().position(|n| n.eq_ignore_ascii_case(text))?;
        let value = u8::try_from(index).ok()? + first;
        if self == FieldKind::DayOfWeek && value == 0 && range_start.is_some_and(|start| start > 0)
        {
            Some(7)
        } else {
            Some(value)
        }
    }
}

/// One parsed field: the set of values it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    /// Bit `v` is set when the field matches value `v`.
    bits: u64,
    /// Whether the field's text starts with `*`; see [`Field::starts_with_star`].
    star: bool,
}

impl Field {
    // ANCHOR: field_parse
    /// Parses one field's text.
    pub(crate) fn parse(kind: FieldKind, text: &str) -> Result<Field, CronError> {
        let mut bits = 0u64;
        for item in text.split(',') {
            if item.is_empty() {
                return Err(CronError::EmptyItem {
                    field: kind.name(),
                    text: text.to_string(),
                });
            }
            let (start, end, step) = parse_item(kind, item)?;
            // `step_by` needs a `usize`; a step larger than the range simply
            // selects the start alone, as in other crons.
            let step = usize::try_from(step).unwrap_or(usize::MAX);
            for value in (start..=end).step_by(step) {
                bits |= 1 << value;
            }
        }
        if kind == FieldKind::DayOfWeek && bits & (1 << 7) != 0 {
            // 7 is another way to write Sunday; keep only one of the two so
            // that matching can use the 0-6 numbering alone.
            bits = (bits & !(1 << 7)) | 1;
        }
        Ok(Field {
            bits,
            star: text.starts_with('*'),
        })
    }
    // ANCHOR_END: field_parse

    /// Whether the field matches `value`.
    pub(crate) fn contains(&self, value: u8) -> bool {
        value < 64 && self.bits & (1 << value) != 0
    }

    /// The smallest matched value that is at least `value`, if any.
    pub(crate) fn first_at_or_after(&self, value: u8) -> Option<u8> {
        if value >= 64 {
            return None;
        }
        let rest = self.bits >> value;
        if rest == 0 {
            None
        } else {
            // `trailing_zeros` of a non-zero u64 is below 64, so it fits.
            u8::try_from(rest.trailing_zeros()).ok().map(|z| value + z)
        }
    }

    /// Whether the field was written starting with `*` (as in `*` or `*/2`).
    ///
    /// Vixie cron, the classic implementation, calls such a day field
    /// "unrestricted" and uses that to decide how day-of-month and
    /// day-of-week combine (see [`CronExpr`](super::CronExpr)). It looks at
    /// the text, not at the values, so `*/2` counts as unrestricted even
    /// though it matches only every other day. We copy that rule exactly so
    /// that expressions mean here what they mean in crontabs.
    pub(crate) fn starts_with_star(&self) -> bool {
        self.star
    }
}

/// Parses one list item into `(start, end, step)`.
fn parse_item(kind: FieldKind, item: &str) -> Result<(u8, u8, u32), CronError> {
    let (min, max) = kind.range();
    let (range_text, step_text) = match item.split_once('/') {
        Some((range, step)) => (range, Some(step)),
        None => (item, None),
    };

    let step = match step_text {
        None => 1,
        Some(step_text) => match parse_number(kind, step_text, item)? {
            0 => {
                return Err(CronError::ZeroStep {
                    field: kind.name(),
                    text: item.to_string(),
                });
            }
            step => step,
        },
    };

    if range_text == "*" {
        return Ok((min, max, step));
    }

    if let Some((start_text, end_text)) = range_text.split_once('-') {
        let start = parse_value(kind, start_text, item, None)?;
        let end = parse_value(kind, end_text, item, Some(start))?;
        if start > end {
            return Err(CronError::Backwards {
                field: kind.name(),
                text: range_text.to_string(),
            });
        }
        return Ok((start, end, step));
    }

    let value = parse_value(kind, range_text, item, None)?;
    if step_text.is_some() {
        return Err(CronError::StepWithoutRange {
            field: kind.name(),
            text: item.to_string(),
            suggestion: format!("{value}-{max}/{step}"),
        });
    }
    Ok((value, value, 1))
}

/// Parses a single value (a number or a name) and checks it is in range.
/// `item` is the whole list item, used in messages when `text` is empty;
/// `range_start` is given when `text` ends a range.
fn parse_value(
    kind: FieldKind,
    text: &str,
    item: &str,
    range_start: Option<u8>,
) -> Result<u8, CronError> {
    if let Some(value) = kind.named_value(text, range_start) {
        return Ok(value);
    }
    let (min, max) = kind.range();
    let number = parse_number(kind, text, item)?;
    match u8::try_from(number) {
        Ok(value) if (min..=max).contains(&value) => Ok(value),
        _ => Err(CronError::OutOfRange {
            field: kind.name(),
            value: text.to_string(),
            min,
            max,
        }),
    }
}

/// Parses a plain decimal number. Only ASCII digits are accepted, so `+5`
/// and ` 5` are rejected even though Rust's integer parser allows a sign.
/// A number too large for `u32` is reported as out of range, not as garbage.
fn parse_number(kind: FieldKind, text: &str, item: &str) -> Result<u32, CronError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        if looks_like_quartz(text) {
            return Err(CronError::Unsupported {
                field: kind.name(),
                text: item.to_string(),
            });
        }
        return Err(CronError::NotAValue {
            field: kind.name(),
            // An empty piece (as in `-5` or `1-`) is best shown in context.
            text: if text.is_empty() { item } else { text }.to_string(),
            expected: kind.expected(),
        });
    }
    text.parse::<u32>().map_err(|_| {
        let (min, max) = kind.range();
        CronError::OutOfRange {
            field: kind.name(),
            value: text.to_string(),
            min,
            max,
        }
    })
}

/// Whether `text` is one of Quartz's day extensions: `L` (last day), `LW`
/// (last weekday), `15W` (nearest weekday), `5L` (last Friday), `5#3` (third
/// Friday) or `?` (no value). They are recognised only to give a clearer
/// error than "not a number".
fn looks_like_quartz(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    if matches!(upper.as_str(), "L" | "LW" | "?") || upper.contains('#') {
        return true;
    }
    match upper.strip_suffix('L').or_else(|| upper.strip_suffix('W')) {
        Some(digits) => !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
        None => false,
    }
}
