//! Black-box tests of `lesson::cron`: the parser, matching, next fire times
//! (checked against the `croner` crate as an independent oracle), daylight
//! saving time, the schedule's tick rules and the on-disk store.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cmp::Ordering;
use std::path::PathBuf;
use std::time::Duration;

use jiff::civil::{DateTime, date};
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};

use lesson::cron::{
    Clock, CronError, CronExpr, CronJob, ManualClock, Schedule, SystemClock, store,
};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn expr(text: &str) -> CronExpr {
    CronExpr::parse(text).unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

fn parse_error(text: &str) -> String {
    match CronExpr::parse(text) {
        Ok(_) => panic!("{text:?} should be rejected"),
        Err(e) => e.to_string(),
    }
}

/// A local date and time.
fn at(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> DateTime {
    date(y, mo, d).at(h, mi, 0, 0)
}

/// A time in `tz`; for a civil time in a fold this is the first showing.
fn zoned(tz: &TimeZone, y: i16, mo: i8, d: i8, h: i8, mi: i8) -> ZonedDateTime {
    at(y, mo, d, h, mi).to_zoned_datetime(tz.clone()).unwrap()
}

fn utc(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> ZonedDateTime {
    zoned(&TimeZone::UTC, y, mo, d, h, mi)
}

/// US Eastern time without a tz database: DST from the second Sunday of
/// March to the first Sunday of November, changing at 02:00 local. In 2026:
/// 2026-03-08 02:00 EST -> 03:00 EDT, 2026-11-01 02:00 EDT -> 01:00 EST.
fn new_york() -> TimeZone {
    TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap()
}

/// Sydney: DST from the first Sunday of October (02:00 -> 03:00) to the
/// first Sunday of April (03:00 -> 02:00). In 2026: 2026-04-05 and
/// 2026-10-04.
fn sydney() -> TimeZone {
    TimeZone::posix("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap()
}

/// "local time and UTC offset", for readable assertions.
fn show(z: &ZonedDateTime) -> String {
    format!("{} {}", z.datetime(), z.offset())
}

/// Ticks a schedule once a minute on a manual clock from `start` for
/// `minutes` minutes and returns (local time shown, job id) per firing.
fn tick_every_minute(
    schedule: &mut Schedule,
    start: ZonedDateTime,
    minutes: i64,
) -> Vec<(String, String)> {
    let clock = ManualClock::new(start);
    let mut fired = Vec::new();
    for _ in 0..=minutes {
        let now = clock.now();
        for job in schedule.tick(&now) {
            fired.push((show(&now), job.id));
        }
        clock.advance(SignedDuration::from_mins(1));
    }
    fired
}

fn recurring(cron: &str) -> CronJob {
    CronJob::new(cron, format!("prompt for {cron}"), true, false)
}

fn one_shot(cron: &str) -> CronJob {
    CronJob::new(cron, format!("prompt for {cron}"), false, false)
}

/// Which minutes of 2026-01-05 10:xx (a Monday) the expression matches.
fn minutes_matched(e: &CronExpr) -> Vec<i8> {
    (0..60)
        .filter(|m| e.matches(at(2026, 1, 5, 10, *m)))
        .collect()
}

/// The days of 2026 on which the expression matches at 00:00.
fn days_matched(e: &CronExpr) -> Vec<String> {
    let mut days = Vec::new();
    let mut day = date(2026, 1, 1);
    while day.year() == 2026 {
        if e.matches(day.at(0, 0, 0, 0)) {
            days.push(day.to_string());
        }
        day = day.tomorrow().unwrap();
    }
    days
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

#[test]
fn parses_every_syntax_form() {
    assert_eq!(minutes_matched(&expr("* 10 * * *")).len(), 60);
    assert_eq!(minutes_matched(&expr("*/15 * * * *")), [0, 15, 30, 45]);
    assert_eq!(minutes_matched(&expr("*/25 * * * *")), [0, 25, 50]);
    assert_eq!(minutes_matched(&expr("7 * * * *")), [7]);
    assert_eq!(minutes_matched(&expr("10-12 * * * *")), [10, 11, 12]);
    assert_eq!(minutes_matched(&expr("10-30/10 * * * *")), [10, 20, 30]);
    assert_eq!(minutes_matched(&expr("10-31/10 * * * *")), [10, 20, 30]);
    assert_eq!(minutes_matched(&expr("5-10/100 * * * *")), [5]);
    assert_eq!(
        minutes_matched(&expr("1,3-4,50-59/4,*/30 * * * *")),
        [0, 1, 3, 4, 30, 50, 54, 58]
    );
    // Every field, one at a time.
    assert!(expr("0 10 * * *").matches(at(2026, 1, 5, 10, 0)));
    assert!(!expr("0 11 * * *").matches(at(2026, 1, 5, 10, 0)));
    assert!(expr("0 0 5 * *").matches(at(2026, 1, 5, 0, 0)));
    assert!(!expr("0 0 6 * *").matches(at(2026, 1, 5, 0, 0)));
    assert!(expr("0 0 * 1 *").matches(at(2026, 1, 5, 0, 0)));
    assert!(!expr("0 0 * 2 *").matches(at(2026, 1, 5, 0, 0)));
    assert!(expr("0 0 * * 1").matches(at(2026, 1, 5, 0, 0)));
    assert!(!expr("0 0 * * 2").matches(at(2026, 1, 5, 0, 0)));
    // Seconds do not matter: cron works in whole minutes.
    assert!(expr("0 10 * * *").matches(date(2026, 1, 5).at(10, 0, 59, 999)));
}

#[test]
fn understands_month_and_weekday_names_in_any_case() {
    let e = expr("0 0 1 jan,Mar-MAY,dec *");
    assert_eq!(
        days_matched(&e),
        [
            "2026-01-01",
            "2026-03-01",
            "2026-04-01",
            "2026-05-01",
            "2026-12-01"
        ]
    );
    // 2026-01-05 is a Monday.
    let weekdays = expr("0 0 * * mon-FRI");
    assert!((5..=9).all(|d| weekdays.matches(at(2026, 1, d, 0, 0))));
    assert!(!weekdays.matches(at(2026, 1, 10, 0, 0)));
    assert!(!weekdays.matches(at(2026, 1, 11, 0, 0)));
    // SUN at the end of a range is 7, so FRI-SUN is Friday to Sunday.
    let weekend = expr("0 0 * * FRI-SUN");
    let matched: Vec<i8> = (5..=11)
        .filter(|d| weekend.matches(at(2026, 1, *d, 0, 0)))
        .collect();
    assert_eq!(matched, [9, 10, 11]);
    assert_eq!(
        days_matched(&expr("0 0 * * SUN-SUN")),
        days_matched(&expr("0 0 * * 0"))
    );
}

#[test]
fn seven_is_sunday() {
    let sunday = at(2026, 1, 11, 0, 0);
    let monday = at(2026, 1, 12, 0, 0);
    for text in [
        "0 0 * * 7",
        "0 0 * * 0",
        "0 0 * * SUN",
        "0 0 * * 5-7",
        "0 0 * * 0-7",
    ] {
        assert!(expr(text).matches(sunday), "{text} on a Sunday");
    }
    assert!(!expr("0 0 * * 7").matches(monday));
    assert_eq!(
        days_matched(&expr("0 0 * * 7")),
        days_matched(&expr("0 0 * * 0"))
    );
    assert_eq!(days_matched(&expr("0 0 * * 0-7")).len(), 365);
}

#[test]
fn day_of_month_and_day_of_week_combine_like_vixie_cron() {
    // Both restricted: either may match (the 1st, or any Monday).
    let either = days_matched(&expr("0 0 1 * MON"));
    assert!(either.contains(&"2026-01-01".to_string())); // a Thursday
    assert!(either.contains(&"2026-01-05".to_string())); // a Monday
    // 52 Mondays and 12 firsts of the month; June 1st is both.
    assert_eq!(either.len(), 52 + 12 - 1);
    // A field starting with `*` counts as unrestricted, even with a step:
    // then a day must match both.
    let both = days_matched(&expr("0 0 */2 * MON"));
    assert!(both.contains(&"2026-01-05".to_string())); // Monday the 5th
    assert!(!both.contains(&"2026-01-12".to_string())); // Monday the 12th
    assert!(!both.contains(&"2026-01-07".to_string())); // Wednesday the 7th
    let both = days_matched(&expr("0 0 1,15 * */2"));
    assert!(
        both.iter()
            .all(|d| d.ends_with("-01") || d.ends_with("-15"))
    );
    assert!(both.contains(&"2026-01-01".to_string())); // a Thursday (4)
    assert!(both.contains(&"2026-02-01".to_string())); // a Sunday (0)
    assert!(!both.contains(&"2026-04-01".to_string())); // a Wednesday (3)
    // `*` in day-of-month: only the weekday decides.
    assert_eq!(days_matched(&expr("0 0 * * MON")).len(), 52);
}

#[test]
fn displays_as_written_and_parses_from_str() {
    assert_eq!(expr("  0   9 *\t* mon-FRI ").to_string(), "0 9 * * mon-FRI");
    assert_eq!(expr("@Daily").to_string(), "@Daily");
    let parsed: CronExpr = "*/5 * * * *".parse().unwrap();
    assert_eq!(parsed, expr("*/5 * * * *"));
    let failed: Result<CronExpr, CronError> = "* * *".parse();
    assert!(failed.is_err());
}

#[test]
fn shortcuts_mean_the_usual_expressions() {
    let from = utc(2026, 5, 13, 10, 30); // a Wednesday
    let next = |text: &str| show(&expr(text).next_after(&from).unwrap());
    assert_eq!(next("@hourly"), "2026-05-13T11:00:00 +00");
    assert_eq!(next("@daily"), "2026-05-14T00:00:00 +00");
    assert_eq!(next("@MIDNIGHT"), "2026-05-14T00:00:00 +00");
    assert_eq!(next("@weekly"), "2026-05-17T00:00:00 +00");
    assert_eq!(next("@monthly"), "2026-06-01T00:00:00 +00");
    assert_eq!(next("@yearly"), "2027-01-01T00:00:00 +00");
    assert_eq!(next("@annually"), "2027-01-01T00:00:00 +00");
}

#[test]
fn errors_name_the_field_the_text_and_the_reason() {
    let cases = [
        (
            "0 0 * *",
            "expected 5 fields (minute hour day-of-month month day-of-week), found 4",
        ),
        (
            "",
            "expected 5 fields (minute hour day-of-month month day-of-week), found 0",
        ),
        (
            "0 0 * * * *",
            "expected 5 fields (minute hour day-of-month month day-of-week), found 6",
        ),
        ("60 * * * *", "minute: 60 is out of range 0-59"),
        (
            "99999999999 * * * *",
            "minute: 99999999999 is out of range 0-59",
        ),
        ("0 24 * * *", "hour: 24 is out of range 0-23"),
        ("0 0 0 * *", "day-of-month: 0 is out of range 1-31"),
        ("0 0 32 * *", "day-of-month: 32 is out of range 1-31"),
        ("0 0 * 13 *", "month: 13 is out of range 1-12"),
        ("0 0 * 0 *", "month: 0 is out of range 1-12"),
        ("0 0 * * 8", "day-of-week: 8 is out of range 0-7"),
        ("0 1-30 * * *", "hour: 30 is out of range 0-23"),
        (
            "*/0 * * * *",
            "minute: step 0 in \"*/0\" must be at least 1",
        ),
        (
            "0 0 1-10/0 * *",
            "day-of-month: step 0 in \"1-10/0\" must be at least 1",
        ),
        ("0 0 20-10 * *", "day-of-month: range 20-10 is backwards"),
        ("0 0 * * FRI-MON", "day-of-week: range FRI-MON is backwards"),
        (
            "5/15 * * * *",
            "minute: \"5/15\" steps from a single value; write a range such as \"5-59/15\"",
        ),
        (
            "0 0 * JAN/3 *",
            "month: \"JAN/3\" steps from a single value; write a range such as \"1-12/3\"",
        ),
        ("1,,2 * * * *", "minute: empty item in list \"1,,2\""),
        ("1, * * * *", "minute: empty item in list \"1,\""),
        ("x * * * *", "minute: \"x\" is not a number"),
        ("+5 * * * *", "minute: \"+5\" is not a number"),
        ("MON * * * *", "minute: \"MON\" is not a number"),
        ("*/x * * * *", "minute: \"x\" is not a number"),
        ("-5 * * * *", "minute: \"-5\" is not a number"),
        (
            "0 0 * FOO *",
            "month: \"FOO\" is not a number or a month name (JAN-DEC)",
        ),
        (
            "0 0 * * MON-",
            "day-of-week: \"MON-\" is not a number or a weekday name (SUN-SAT)",
        ),
        (
            "0 0 L * *",
            "day-of-month: \"L\" is not supported (L, W, # and ? are Quartz extensions)",
        ),
        (
            "0 0 LW * *",
            "day-of-month: \"LW\" is not supported (L, W, # and ? are Quartz extensions)",
        ),
        (
            "0 0 15W * *",
            "day-of-month: \"15W\" is not supported (L, W, # and ? are Quartz extensions)",
        ),
        (
            "0 0 ? * MON",
            "day-of-month: \"?\" is not supported (L, W, # and ? are Quartz extensions)",
        ),
        (
            "0 0 * * 5#3",
            "day-of-week: \"5#3\" is not supported (L, W, # and ? are Quartz extensions)",
        ),
        (
            "0 0 * * 5L",
            "day-of-week: \"5L\" is not supported (L, W, # and ? are Quartz extensions)",
        ),
        (
            "@reboot",
            "unknown shortcut \"@reboot\" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)",
        ),
        (
            "0 0 30 2 *",
            "can never fire: day-of-month \"30\" never occurs in month \"2\"",
        ),
        (
            "0 0 31 4,6 *",
            "can never fire: day-of-month \"31\" never occurs in month \"4,6\"",
        ),
        (
            "0 0 30-31 FEB */2",
            "can never fire: day-of-month \"30-31\" never occurs in month \"FEB\"",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(parse_error(text), message, "for {text:?}");
    }
}

#[test]
fn expressions_that_fire_rarely_are_not_rejected() {
    // With a restricted weekday the OR rule finds days in every month.
    assert!(CronExpr::parse("0 0 30 2 MON").is_ok());
    assert!(CronExpr::parse("0 0 29 2 *").is_ok());
    assert!(CronExpr::parse("0 0 31 4,5 *").is_ok());
}

// ---------------------------------------------------------------------------
// Month ends and leap years
// ---------------------------------------------------------------------------

#[test]
fn the_31st_skips_shorter_months() {
    let e = expr("0 0 31 * *");
    let mut fires = Vec::new();
    let mut t = utc(2026, 1, 1, 0, 0);
    while let Some(next) = e.next_after(&t) {
        if next.year() > 2026 {
            break;
        }
        fires.push(next.datetime().date().to_string());
        t = next;
    }
    assert_eq!(
        fires,
        [
            "2026-01-31",
            "2026-03-31",
            "2026-05-31",
            "2026-07-31",
            "2026-08-31",
            "2026-10-31",
            "2026-12-31"
        ]
    );
}

#[test]
fn the_29th_of_february_waits_for_a_leap_year() {
    let e = expr("0 0 29 2 *");
    let next = e.next_after(&utc(2026, 1, 1, 0, 0)).unwrap();
    assert_eq!(show(&next), "2028-02-29T00:00:00 +00");
    // 2100 is not a leap year, so after 2096 the next one is 2104.
    let next = e.next_after(&utc(2096, 2, 29, 0, 0)).unwrap();
    assert_eq!(show(&next), "2104-02-29T00:00:00 +00");
    // Rarer still: a 29th of February that is a Sunday.
    let next = expr("0 0 29 2 */7")
        .next_after(&utc(2026, 1, 1, 0, 0))
        .unwrap();
    assert_eq!(show(&next), "2032-02-29T00:00:00 +00");
}

// ---------------------------------------------------------------------------
// Differential test against croner
// ---------------------------------------------------------------------------

/// xorshift64*: a tiny, seedable pseudo-random generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn range(&mut self, low: u8, high: u8) -> u8 {
        low + self.below(u64::from(high - low) + 1) as u8
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Writes `value` of a field, sometimes as a name in random case.
fn write_value(rng: &mut Rng, field: usize, value: u8, range_end_after: Option<u8>) -> String {
    let name = match field {
        3 => Some(MONTHS[usize::from(value - 1)]),
        // SUN at the end of a range means 7 in both parsers, but SUN-SUN
        // (or 0-SUN) is read differently by croner (0-7), so only name a
        // Sunday that ends a range starting after Sunday.
        4 if value == 7 && range_end_after.is_some_and(|start| start > 0) => Some("SUN"),
        4 if value < 7 && range_end_after.is_none_or(|start| start > 0 || value > 0) => {
            Some(WEEKDAYS[usize::from(value)])
        }
        _ => None,
    };
    match name {
        Some(name) if rng.chance(30) => {
            if rng.chance(50) {
                name.to_lowercase()
            } else {
                name.to_string()
            }
        }
        _ => value.to_string(),
    }
}

/// A random field drawn from the accepted grammar.
fn random_field(rng: &mut Rng, field: usize) -> String {
    let (min, max) = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)][field];
    if rng.chance(35) {
        return "*".to_string();
    }
    let items = 1 + rng.below(3);
    let mut parts = Vec::new();
    for _ in 0..items {
        let part = match rng.below(4) {
            0 => format!("*/{}", rng.range(1, max + 2)),
            1 => {
                let value = rng.range(min, max);
                write_value(rng, field, value, None)
            }
            shape => {
                let start = rng.range(min, max);
                let end = rng.range(start, max);
                let start_text = write_value(rng, field, start, None);
                let end_text = write_value(rng, field, end, Some(start));
                let range = format!("{start_text}-{end_text}");
                if shape == 3 {
                    format!("{range}/{}", rng.range(1, max + 2))
                } else {
                    range
                }
            }
        };
        parts.push(part);
    }
    parts.join(",")
}

fn random_expression(rng: &mut Rng) -> String {
    if rng.chance(2) {
        let shortcuts = [
            "@yearly",
            "@annually",
            "@monthly",
            "@weekly",
            "@daily",
            "@hourly",
        ];
        return shortcuts[rng.below(shortcuts.len() as u64) as usize].to_string();
    }
    (0..5)
        .map(|f| random_field(rng, f))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A jiff 1 time for croner. croner's `jiff` feature targets jiff 0.2, so we
/// connect jiff 1 ourselves through croner's `CronDateTime` trait.
#[derive(Clone, Debug)]
struct Oracle(ZonedDateTime);

impl croner::CronDateTime for Oracle {
    fn to_civil(&self) -> croner::CivilDateTime {
        let dt = self.0.datetime();
        croner::CivilDateTime::from_ymd_hms(
            i32::from(dt.year()),
            dt.month() as u32,
            dt.day() as u32,
            dt.hour() as u32,
            dt.minute() as u32,
            dt.second() as u32,
        )
        .unwrap()
    }

    fn civil_weekday(&self) -> croner::Weekday {
        croner::Weekday::from_days_from_sunday(self.0.weekday().to_sunday_zero_offset() as u32)
    }

    fn resolve_civil(
        &self,
        civil: croner::CivilDateTime,
    ) -> Result<croner::Resolution<Self>, croner::errors::CronError> {
        let bad = |_| croner::errors::CronError::InvalidDate;
        let dt = date(civil.year() as i16, civil.month() as i8, civil.day() as i8).to_datetime(
            jiff::civil::Time::new(
                civil.hour() as i8,
                civil.minute() as i8,
                civil.second() as i8,
                0,
            )
            .map_err(bad)?,
        );
        let tz = self.0.time_zone().clone();
        let ambiguous = tz.to_ambiguous_zoned_datetime(dt);
        Ok(match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { .. } => {
                croner::Resolution::Single(Oracle(ambiguous.unambiguous().map_err(bad)?))
            }
            AmbiguousOffset::Gap { .. } => croner::Resolution::Gap,
            AmbiguousOffset::Fold { .. } => croner::Resolution::Ambiguous(
                Oracle(ambiguous.clone().earlier().map_err(bad)?),
                Oracle(ambiguous.later().map_err(bad)?),
            ),
        })
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0
            .checked_add(SignedDuration::from_secs(seconds))
            .ok()
            .map(Oracle)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.timestamp().cmp(&other.0.timestamp())
    }
}

// ANCHOR: oracle
#[test]
fn agrees_with_croner_on_random_expressions() {
    // A fixed seed keeps the test reproducible; change it here to try
    // others. Every failure message prints the seed in use.
    let seed: u64 = 0x5EED_C0DE_2026_0001; // xorshift must not start at zero
    let mut rng = Rng(seed);
    // croner's default day rule is OR unless a field is exactly `*`.
    // Vixie's (ours) is AND whenever a day field merely *starts* with `*`
    // (as `*/2` does). croner's `dom_and_dow` option gives AND, so choosing
    // its parser by Vixie's rule compares like with like, with no exclusions.
    let croner_or = croner::parser::CronParser::new();
    let croner_and = croner::parser::CronParser::builder()
        .dom_and_dow(true)
        .build();
    let nepal = TimeZone::fixed(Offset::from_seconds(5 * 3600 + 45 * 60).unwrap());
    // 2000-01-01 to 2100-01-01, in seconds.
    let (low, span) = (946_684_800_i64, 3_155_760_000_i64);

    let mut tested = 0;
    while tested < 3000 {
        let text = random_expression(&mut rng);
        let ours = match CronExpr::parse(&text) {
            Ok(ours) => ours,
            // The generator writes only valid syntax, so only the "can never
            // fire" check may reject it; croner accepts such expressions and
            // would search for 3000 years, so they are left out.
            Err(CronError::NeverFires { .. }) => continue,
            Err(e) => panic!("seed {seed:#x}: {text:?} was rejected: {e}"),
        };
        tested += 1;
        let fields: Vec<&str> = text.split(' ').collect();
        let vixie_and =
            fields.len() == 5 && (fields[2].starts_with('*') || fields[4].starts_with('*'));
        let parser = if vixie_and { &croner_and } else { &croner_or };
        let theirs = parser
            .parse(&text)
            .unwrap_or_else(|e| panic!("seed {seed:#x}: croner rejects {text:?}: {e}"));

        for round in 0..4 {
            let second = low + rng.below(span as u64) as i64;
            let tz = if round % 2 == 0 {
                TimeZone::UTC
            } else {
                nepal.clone()
            };
            let t = Timestamp::from_second(second)
                .unwrap()
                .to_zoned_datetime(tz);
            let minute = t.with().second(0).build().unwrap();

            let expected = theirs.is_time_matching(&Oracle(minute.clone())).unwrap();
            assert_eq!(
                ours.matches(minute.datetime()),
                expected,
                "seed {seed:#x}: {text:?} matching {}",
                show(&minute)
            );

            let expected = theirs.find_next_occurrence(&Oracle(t.clone()), false).ok();
            let actual = ours.next_after(&t);
            assert_eq!(
                actual.as_ref().map(ZonedDateTime::timestamp),
                expected.as_ref().map(|o| o.0.timestamp()),
                "seed {seed:#x}: {text:?} next after {}",
                show(&t)
            );
        }
    }
}
// ANCHOR_END: oracle

// ---------------------------------------------------------------------------
// Daylight saving time
// ---------------------------------------------------------------------------

#[test]
fn a_time_skipped_by_spring_forward_fires_once_right_after_the_gap() {
    let tz = new_york();
    let mut schedule = Schedule::new();
    let id = schedule.add(recurring("30 2 * * *")).unwrap().id;
    let start = zoned(&tz, 2026, 3, 7, 12, 0);
    assert_eq!(
        show(&schedule.next_fire(&id, &start).unwrap()),
        "2026-03-08T03:00:00 -04"
    );
    assert_eq!(
        show(&expr("30 2 * * *").next_after(&start).unwrap()),
        "2026-03-08T03:00:00 -04"
    );
    let fired = tick_every_minute(&mut schedule, start, 48 * 60);
    assert_eq!(
        fired,
        [
            ("2026-03-08T03:00:00 -04".to_string(), id.clone()),
            ("2026-03-09T02:30:00 -04".to_string(), id.clone()),
        ]
    );
}

#[test]
fn a_time_in_the_repeated_hour_fires_once() {
    let tz = new_york();
    let mut schedule = Schedule::new();
    let id = schedule.add(recurring("30 1 * * *")).unwrap().id;
    let fired = tick_every_minute(&mut schedule, zoned(&tz, 2026, 11, 1, 0, 0), 24 * 60);
    assert_eq!(fired, [("2026-11-01T01:30:00 -04".to_string(), id)]);
}

#[test]
fn every_thirty_minutes_across_spring_forward() {
    let tz = new_york();
    let mut schedule = Schedule::new();
    schedule.add(recurring("*/30 * * * *")).unwrap();
    // 00:00 EST to 05:00 EDT: four real hours.
    let fired = tick_every_minute(&mut schedule, zoned(&tz, 2026, 3, 8, 0, 0), 4 * 60);
    let times: Vec<&str> = fired.iter().map(|(t, _)| t.as_str()).collect();
    // Real time keeps its 30-minute rhythm: 02:00 and 02:30 do not exist,
    // and both collapse into the one firing at 03:00.
    assert_eq!(
        times,
        [
            "2026-03-08T00:00:00 -05",
            "2026-03-08T00:30:00 -05",
            "2026-03-08T01:00:00 -05",
            "2026-03-08T01:30:00 -05",
            "2026-03-08T03:00:00 -04",
            "2026-03-08T03:30:00 -04",
            "2026-03-08T04:00:00 -04",
            "2026-03-08T04:30:00 -04",
            "2026-03-08T05:00:00 -04",
        ]
    );
}

#[test]
fn every_thirty_minutes_pauses_in_the_repeated_hour() {
    let tz = new_york();
    let mut schedule = Schedule::new();
    schedule.add(recurring("*/30 * * * *")).unwrap();
    // 00:00 EDT to 03:00 EST: four real hours.
    let fired = tick_every_minute(&mut schedule, zoned(&tz, 2026, 11, 1, 0, 0), 4 * 60);
    let times: Vec<&str> = fired.iter().map(|(t, _)| t.as_str()).collect();
    // 01:00 and 01:30 EST repeat minutes already fired at -04, so they do
    // not fire again; the next firing is 02:00 EST, 90 real minutes later.
    // next_after knows this too when asked from inside the repeated hour.
    let second_pass = Timestamp::from_second(1_793_513_400)
        .unwrap()
        .to_zoned_datetime(tz.clone());
    assert_eq!(show(&second_pass), "2026-11-01T01:10:00 -05");
    let next = expr("*/30 * * * *").next_after(&second_pass).unwrap();
    assert_eq!(show(&next), "2026-11-01T02:00:00 -05");
    assert_eq!(
        times,
        [
            "2026-11-01T00:00:00 -04",
            "2026-11-01T00:30:00 -04",
            "2026-11-01T01:00:00 -04",
            "2026-11-01T01:30:00 -04",
            "2026-11-01T02:00:00 -05",
            "2026-11-01T02:30:00 -05",
            "2026-11-01T03:00:00 -05",
        ]
    );
}

#[test]
fn southern_hemisphere_changes_follow_the_same_rules() {
    let tz = sydney();
    let mut schedule = Schedule::new();
    let id = schedule.add(recurring("30 2 * * *")).unwrap().id;
    // October: 02:00 AEST jumps to 03:00 AEDT.
    let fired = tick_every_minute(&mut schedule, zoned(&tz, 2026, 10, 3, 12, 0), 24 * 60);
    assert_eq!(fired, [("2026-10-04T03:00:00 +11".to_string(), id.clone())]);
    // April: 03:00 AEDT falls back to 02:00 AEST; 02:30 happens twice.
    let mut schedule = Schedule::new();
    let id = schedule.add(recurring("30 2 * * *")).unwrap().id;
    let fired = tick_every_minute(&mut schedule, zoned(&tz, 2026, 4, 4, 12, 0), 24 * 60);
    assert_eq!(fired, [("2026-04-05T02:30:00 +11".to_string(), id)]);
}

/// Ticks through a whole year with several jobs and checks that each
/// firing is exactly what `next_after` (and `next_fire`) predicted from the
/// previous one, and that no predicted firing is missed.
///
/// To stay fast in a debug build, the clock moves 15 minutes per tick
/// (35,040 ticks instead of 525,600). For expressions that match only
/// quarter hours this fires at exactly the instants that ticking every
/// minute would: each tick's new local minutes hold one quarter hour, the
/// one the tick lands on, except across a spring-forward gap, where the
/// gap's quarter hours collapse into the tick at the jump either way. The
/// minute-by-minute tests above cover the transition days themselves.
fn next_after_agrees_with_a_year_of_ticks(tz: TimeZone, texts: &[&str]) {
    let mut schedule = Schedule::new();
    let start = zoned(&tz, 2026, 1, 1, 0, 0);
    let mut predicted = Vec::new();
    let mut ids = Vec::new();
    for text in texts {
        assert!(
            (0..60)
                .filter(|m| m % 15 != 0)
                .all(|m| !text.starts_with(&format!("{m} "))),
            "{text:?} must match only quarter hours"
        );
        ids.push(schedule.add(recurring(text)).unwrap().id);
        predicted.push(expr(text).next_after(&start).unwrap());
    }
    schedule.tick(&start);
    let clock = ManualClock::new(start.clone());
    let mut fired_count = vec![0; texts.len()];
    for _ in 0..365 * 24 * 4 {
        clock.advance(SignedDuration::from_mins(15));
        let now = clock.now();
        for job in schedule.tick(&now) {
            let i = ids.iter().position(|id| *id == job.id).unwrap();
            assert_eq!(
                show(&predicted[i]),
                show(&now),
                "{:?} fired at a time next_after did not predict",
                texts[i]
            );
            fired_count[i] += 1;
            predicted[i] = expr(texts[i]).next_after(&now).unwrap();
            assert_eq!(
                schedule.next_fire(&job.id, &now),
                Some(predicted[i].clone())
            );
        }
        for (i, prediction) in predicted.iter().enumerate() {
            assert!(
                prediction.timestamp() > now.timestamp(),
                "{:?} should have fired at {}",
                texts[i],
                show(prediction)
            );
        }
    }
    assert!(fired_count.iter().all(|n| *n > 0), "{fired_count:?}");
}

#[test]
fn next_after_agrees_with_ticking_through_a_northern_year() {
    next_after_agrees_with_a_year_of_ticks(
        new_york(),
        &[
            "30 2 * * *",
            "*/30 1-3 * * *",
            "15 1 1-7 * SUN",
            "0 2 8 MAR *",
            "45 1 1 NOV *",
            "0 0 * * MON",
            "*/15 2 * MAR,NOV SUN",
        ],
    );
}

#[test]
fn next_after_agrees_with_ticking_through_a_southern_year() {
    next_after_agrees_with_a_year_of_ticks(
        sydney(),
        &[
            "30 2 * * *",
            "0,30 2-3 * * *",
            "0 3 4,5 APR,OCT *",
            "45 2 * APR *",
        ],
    );
}

// ---------------------------------------------------------------------------
// Schedule
// ---------------------------------------------------------------------------

#[test]
fn one_shot_jobs_are_removed_after_firing_and_recurring_jobs_stay() {
    let mut schedule = Schedule::new();
    let once = schedule.add(one_shot("0 10 * * *")).unwrap().id;
    let again = schedule.add(recurring("0 10 * * *")).unwrap().id;
    assert!(schedule.tick(&utc(2026, 1, 5, 9, 59)).is_empty());
    let fired: Vec<String> = schedule
        .tick(&utc(2026, 1, 5, 10, 0))
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(fired, [once.clone(), again.clone()]);
    assert!(schedule.get(&once).is_none());
    assert!(schedule.get(&again).is_some());
    assert_eq!(schedule.len(), 1);
    let fired: Vec<String> = schedule
        .tick(&utc(2026, 1, 6, 10, 0))
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(fired, [again]);
}

#[test]
fn a_late_tick_fires_each_job_once() {
    let mut schedule = Schedule::new();
    schedule.add(recurring("* * * * *")).unwrap();
    schedule.add(recurring("0 * * * *")).unwrap();
    schedule.add(recurring("0 0 * * *")).unwrap();
    assert_eq!(schedule.tick(&utc(2026, 1, 5, 10, 0)).len(), 2);
    // Three hours pass without a tick (a suspended laptop).
    let fired = schedule.tick(&utc(2026, 1, 5, 13, 0));
    let crons: Vec<&str> = fired.iter().map(|j| j.cron.as_str()).collect();
    assert_eq!(crons, ["* * * * *", "0 * * * *"]);
    // The next minute is an ordinary one again.
    assert_eq!(schedule.tick(&utc(2026, 1, 5, 13, 1)).len(), 1);
    // A late tick that misses 00:00 still catches it, once.
    let fired = schedule.tick(&utc(2026, 1, 6, 0, 7));
    assert_eq!(fired.len(), 3);
}

#[test]
fn the_first_tick_looks_only_at_its_own_minute() {
    let mut schedule = Schedule::new();
    schedule.add(recurring("0 9 * * *")).unwrap();
    assert!(schedule.tick(&utc(2026, 1, 5, 10, 0)).is_empty());
    let mut schedule = Schedule::new();
    schedule.add(recurring("0 10 * * *")).unwrap();
    assert_eq!(schedule.tick(&utc(2026, 1, 5, 10, 0)).len(), 1);
}

#[test]
fn a_job_fires_once_however_often_its_minute_is_ticked() {
    let mut schedule = Schedule::new();
    schedule.add(recurring("* * * * *")).unwrap();
    let minute = utc(2026, 1, 5, 10, 0);
    assert_eq!(schedule.tick(&minute).len(), 1);
    for seconds in [0, 1, 30, 59] {
        let again = minute
            .checked_add(SignedDuration::from_secs(seconds))
            .unwrap();
        assert!(schedule.tick(&again).is_empty(), "at +{seconds}s");
    }
    assert_eq!(schedule.tick(&utc(2026, 1, 5, 10, 1)).len(), 1);
}

#[test]
fn jobs_added_between_ticks_do_not_fire_for_minutes_already_ticked() {
    let mut schedule = Schedule::new();
    schedule.add(recurring("59 23 * * *")).unwrap();
    assert!(schedule.tick(&utc(2026, 1, 5, 10, 0)).is_empty());
    schedule.add(recurring("0 10 * * *")).unwrap();
    schedule.add(recurring("1 10 * * *")).unwrap();
    let fired = schedule.tick(&utc(2026, 1, 5, 10, 1));
    let crons: Vec<&str> = fired.iter().map(|j| j.cron.as_str()).collect();
    assert_eq!(crons, ["1 10 * * *"]);
}

#[test]
fn setting_the_clock_back_does_not_repeat_a_firing() {
    let clock = ManualClock::new(utc(2026, 1, 5, 10, 0));
    let mut schedule = Schedule::new();
    schedule.add(recurring("*/5 * * * *")).unwrap();
    assert_eq!(schedule.tick(&clock.now()).len(), 1);
    clock.set(utc(2026, 1, 5, 9, 58));
    let mut fired = Vec::new();
    for _ in 0..10 {
        for job in schedule.tick(&clock.now()) {
            fired.push((show(&clock.now()), job.cron));
        }
        clock.advance(SignedDuration::from_mins(1));
    }
    assert_eq!(
        fired,
        [(
            "2026-01-05T10:05:00 +00".to_string(),
            "*/5 * * * *".to_string()
        )]
    );
}

#[test]
fn cancel_removes_a_job_and_keeps_the_order_of_the_rest() {
    let mut schedule = Schedule::new();
    let a = schedule.add(recurring("0 * * * *")).unwrap().id;
    let b = schedule.add(recurring("1 * * * *")).unwrap().id;
    let c = schedule.add(recurring("2 * * * *")).unwrap().id;
    let cancelled = schedule.cancel(&b).unwrap();
    assert_eq!(cancelled.cron, "1 * * * *");
    assert!(schedule.cancel(&b).is_none());
    assert!(schedule.cancel("cron_9999").is_none());
    let ids: Vec<&str> = schedule.jobs().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, [a.as_str(), c.as_str()]);
    assert!(schedule.next_fire(&b, &utc(2026, 1, 1, 0, 0)).is_none());
}

#[test]
fn ids_count_up_and_continue_after_loaded_ones() {
    let mut schedule = Schedule::new();
    assert!(schedule.is_empty());
    assert_eq!(
        schedule.add(recurring("* * * * *")).unwrap().id,
        "cron_0001"
    );
    let mut loaded = recurring("* * * * *");
    loaded.id = "cron_0041".to_string();
    assert_eq!(schedule.add(loaded.clone()).unwrap().id, "cron_0041");
    let mut odd = recurring("* * * * *");
    odd.id = "handmade".to_string();
    assert_eq!(schedule.add(odd).unwrap().id, "handmade");
    assert_eq!(
        schedule.add(recurring("* * * * *")).unwrap().id,
        "cron_0042"
    );
    assert_eq!(
        schedule.add(loaded).unwrap_err().to_string(),
        "a job with id \"cron_0041\" is already scheduled"
    );
    assert_eq!(
        schedule
            .add(recurring("0 0 31 2 *"))
            .unwrap_err()
            .to_string(),
        "can never fire: day-of-month \"31\" never occurs in month \"2\""
    );
    assert_eq!(
        schedule.add(recurring("* * * * *")).unwrap().id,
        "cron_0043"
    );
    assert_eq!(schedule.len(), 5);
}

#[test]
fn next_fire_agrees_with_tick_after_a_firing() {
    let mut schedule = Schedule::new();
    let id = schedule.add(recurring("*/10 9-10 * * MON-FRI")).unwrap().id;
    let friday = utc(2026, 1, 9, 10, 50);
    assert_eq!(schedule.tick(&friday).len(), 1);
    assert_eq!(
        show(&schedule.next_fire(&id, &friday).unwrap()),
        "2026-01-12T09:00:00 +00"
    );
}

#[test]
fn until_next_minute_reaches_the_next_minute_mark() {
    let now = date(2026, 1, 5)
        .at(10, 0, 30, 250_000_000)
        .to_zoned_datetime(TimeZone::UTC)
        .unwrap();
    assert_eq!(
        Schedule::until_next_minute(&now),
        Duration::from_millis(29_750)
    );
    assert_eq!(
        Schedule::until_next_minute(&utc(2026, 1, 5, 10, 0)),
        Duration::from_secs(60)
    );
    let nepal = TimeZone::fixed(Offset::from_seconds(5 * 3600 + 45 * 60).unwrap());
    let now = date(2026, 1, 5)
        .at(10, 0, 45, 0)
        .to_zoned_datetime(nepal)
        .unwrap();
    assert_eq!(Schedule::until_next_minute(&now), Duration::from_secs(15));
}

#[test]
fn job_describes_its_kind_and_lifetime() {
    let job = CronJob::new("0 9 * * *", "standup notes", true, true);
    assert_eq!((job.kind(), job.lifetime()), ("recurring", "durable"));
    let job = CronJob::new("0 9 * * *", "standup notes", false, false);
    assert_eq!((job.kind(), job.lifetime()), ("one-shot", "session"));
    assert_eq!(job.expr().unwrap().to_string(), "0 9 * * *");
}

#[test]
fn clocks_tell_the_time() {
    let before = Timestamp::now();
    let now = SystemClock.now().timestamp();
    assert!(now >= before && now <= Timestamp::now());
    let clock = ManualClock::new(utc(2026, 1, 5, 10, 0));
    clock.advance(SignedDuration::from_hours(3));
    assert_eq!(show(&clock.now()), "2026-01-05T13:00:00 +00");
    clock.set(utc(2020, 1, 1, 0, 0));
    assert_eq!(show(&clock.now()), "2020-01-01T00:00:00 +00");
    // Shared between threads, as a scheduler would.
    let shared: std::sync::Arc<dyn Clock> = std::sync::Arc::new(clock);
    let reader = std::sync::Arc::clone(&shared);
    let seen = std::thread::spawn(move || reader.now()).join().unwrap();
    assert_eq!(seen, shared.now());
}

// ---------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------

/// A fresh, empty directory for one test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("cron-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self) -> PathBuf {
        self.0.join(store::FILE_NAME)
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn job(id: &str, cron: &str, recurring: bool, durable: bool) -> CronJob {
    CronJob {
        id: id.to_string(),
        cron: cron.to_string(),
        prompt: format!("prompt {id}"),
        recurring,
        durable,
    }
}

#[test]
fn store_round_trips_jobs() {
    let dir = TempDir::new("round-trip");
    let jobs = vec![
        job("cron_0001", "0 9 * * MON-FRI", true, true),
        job("cron_0002", "@daily", false, true),
    ];
    store::save(&dir.file(), &jobs).unwrap();
    assert_eq!(store::load(&dir.file()), (jobs, Vec::new()));
    assert_eq!(store::FILE_NAME, ".scheduled_tasks.json");
}

#[test]
fn store_uses_the_course_field_names() {
    let dir = TempDir::new("fields");
    store::save(&dir.file(), &[job("cron_0001", "* * * * *", true, false)]).unwrap();
    let text = std::fs::read_to_string(dir.file()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        serde_json::json!([{
            "id": "cron_0001",
            "cron": "* * * * *",
            "prompt": "prompt cron_0001",
            "recurring": true,
            "durable": false
        }])
    );
}

#[test]
fn store_treats_a_missing_file_as_empty() {
    let dir = TempDir::new("missing");
    assert_eq!(store::load(&dir.file()), (Vec::new(), Vec::new()));
}

#[test]
fn store_reports_a_corrupt_file_as_one_problem() {
    let dir = TempDir::new("corrupt");
    for text in ["{not json", "{\"id\": \"cron_0001\"}", ""] {
        std::fs::write(dir.file(), text).unwrap();
        let (jobs, problems) = store::load(&dir.file());
        assert!(jobs.is_empty(), "{text:?}");
        assert_eq!(problems.len(), 1, "{text:?}: {problems:?}");
        assert!(problems[0].contains(store::FILE_NAME), "{problems:?}");
    }
}

#[test]
fn store_skips_bad_entries_and_loads_the_rest() {
    let dir = TempDir::new("bad-entries");
    let text = r#"[
        {"id": "cron_0001", "cron": "0 9 * * *", "prompt": "good", "recurring": true, "durable": true},
        {"id": "cron_0002", "cron": "0 25 * * *", "prompt": "bad hour", "recurring": true, "durable": true},
        {"id": "cron_0003", "cron": "0 9 * * *", "recurring": true, "durable": true},
        {"cron": "0 9 * * *", "prompt": "no id", "recurring": "yes", "durable": true},
        {"id": "cron_0001", "cron": "0 9 * * *", "prompt": "again", "recurring": true, "durable": true},
        {"id": "cron_0005", "cron": "*/5 * * * *", "prompt": "good too", "recurring": false, "durable": true}
    ]"#;
    std::fs::write(dir.file(), text).unwrap();
    let (jobs, problems) = store::load(&dir.file());
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["cron_0001", "cron_0005"]);
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert!(
        problems[0].starts_with("entry 2 (id \"cron_0002\")"),
        "{problems:?}"
    );
    assert!(
        problems[0].contains("hour: 25 is out of range 0-23"),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("entry 3 (id \"cron_0003\")"),
        "{problems:?}"
    );
    assert!(problems[1].contains("prompt"), "{problems:?}");
    assert!(problems[2].starts_with("entry 4:"), "{problems:?}");
    assert!(
        problems[3].starts_with("entry 5 (id \"cron_0001\")"),
        "{problems:?}"
    );
    // Loaded jobs go straight into a schedule, and new ids continue.
    let mut schedule = Schedule::new();
    for job in jobs {
        schedule.add(job).unwrap();
    }
    assert_eq!(
        schedule.add(recurring("* * * * *")).unwrap().id,
        "cron_0006"
    );
}

#[test]
fn store_saves_atomically_leaving_no_temporary_files() {
    let dir = TempDir::new("atomic");
    store::save(&dir.file(), &[job("cron_0001", "* * * * *", true, true)]).unwrap();
    store::save(&dir.file(), &[job("cron_0002", "0 * * * *", true, true)]).unwrap();
    assert_eq!(dir.names(), [store::FILE_NAME]);
    let (jobs, _) = store::load(&dir.file());
    assert_eq!(jobs, [job("cron_0002", "0 * * * *", true, true)]);
    // A failed save (the target is a directory) leaves nothing behind and
    // the error is reported.
    let blocked = dir.0.join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    assert!(store::save(&blocked, &[]).is_err());
    assert_eq!(dir.names(), [store::FILE_NAME, "blocked"]);
}

#[test]
fn durable_jobs_are_the_ones_saved() {
    let mut schedule = Schedule::new();
    schedule
        .add(CronJob::new("0 9 * * *", "keep", true, true))
        .unwrap();
    schedule
        .add(CronJob::new("0 9 * * *", "forget", true, false))
        .unwrap();
    let durable = schedule.durable_jobs();
    assert_eq!(durable.len(), 1);
    assert_eq!(durable[0].prompt, "keep");
}
