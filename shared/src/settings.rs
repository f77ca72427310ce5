//! Settings that a lesson lets the environment override, parsed in one
//! place and one way.
//!
//! Library code never reads the environment itself: a lesson's `main`
//! hands a lookup function (usually [`from_env`]) to the `from_lookup`
//! constructor of a config struct, and tests hand it a closure over a few
//! pairs. So an exported `COMPACT_THRESHOLD_TOKENS` in a developer's shell
//! changes the binary, never a test.
//!
//! A value that is set but unusable is an error, not silently ignored: a
//! user who set it expects it to count.

use std::fmt;
use std::str::FromStr;

/// Looks a variable up in the process environment (for `main`).
pub fn from_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// An override that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable} must be {expected}, got {value:?}")]
pub struct InvalidSetting {
    /// The environment variable, e.g. `AGENT_MAX_ROUNDS`.
    pub variable: String,
    /// What it was set to.
    pub value: String,
    /// What would have been accepted, e.g. "a whole number of at least 1".
    pub expected: String,
}

/// The whole number `lookup` finds for `variable`, at least `minimum`;
/// `None` when it is not set. Underscores are allowed as separators
/// (`50_000`).
pub fn number<T>(
    lookup: &impl Fn(&str) -> Option<String>,
    variable: &str,
    minimum: T,
) -> Result<Option<T>, InvalidSetting>
where
    T: FromStr + PartialOrd + fmt::Display + Copy,
{
    let Some(value) = lookup(variable) else {
        return Ok(None);
    };
    match value.trim().replace('_', "").parse::<T>() {
        Ok(number) if number >= minimum => Ok(Some(number)),
        _ => Err(InvalidSetting {
            variable: variable.to_string(),
            value,
            expected: format!("a whole number of at least {minimum}"),
        }),
    }
}

/// The text `lookup` finds for `variable`, trimmed; `None` when it is not
/// set or blank.
pub fn text(lookup: &impl Fn(&str) -> Option<String>, variable: &str) -> Option<String> {
    lookup(variable)
        .map(|value| value.trim().to_string())
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(value: &'static str) -> impl Fn(&str) -> Option<String> {
        move |name: &str| (name == "N").then(|| value.to_string())
    }

    #[test]
    fn numbers_are_parsed_with_separators_and_checked_against_the_minimum() {
        assert_eq!(number(&lookup("2_000"), "N", 1usize), Ok(Some(2_000)));
        assert_eq!(number(&lookup("5"), "OTHER", 1usize), Ok(None));
        let error = number(&lookup("0"), "N", 1usize).unwrap_err();
        assert_eq!(
            error.to_string(),
            "N must be a whole number of at least 1, got \"0\""
        );
        assert!(number(&lookup("lots"), "N", 0u64).is_err());
    }

    #[test]
    fn blank_text_is_unset() {
        assert_eq!(text(&lookup("  "), "N"), None);
        assert_eq!(text(&lookup(" m "), "N"), Some("m".to_string()));
    }
}
