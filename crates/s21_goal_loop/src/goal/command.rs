//! `/goal`: the user's three commands, answered by the harness.
//!
//! `/goal <condition>` sets a goal (`/goal <condition> --check <command>`
//! one that only the command's exit status can meet), `/goal` shows it,
//! `/goal clear` drops it. The front end hands every `/` line to
//! [`shared::hooks::Hooks::slash_command`] before any turn, so none of them
//! enters the history: the line that sets a goal cannot be read back as
//! evidence for it.

use std::time::Duration;

use shared::text::plural;

use super::{Goal, GoalStatus};

/// The flag that gives a goal its check; the rest of the line is the
/// command.
pub const CHECK_FLAG: &str = "--check";

// ANCHOR: command
/// A `/goal` line, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/goal`: show the goal.
    Status,
    /// `/goal clear`: drop the goal and its queued continuation.
    Clear,
    /// `/goal <condition> [--check <command>]`: set a goal, replacing any
    /// other.
    Set {
        objective: String,
        /// The shell command whose exit status 0 alone meets the goal.
        check: Option<String>,
    },
    /// A `/goal` line that cannot be used, and why.
    Invalid(String),
}

/// `Some` for a line whose first word is `/goal`, `None` for any other.
pub fn parse(line: &str) -> Option<Command> {
    let rest = line.trim().strip_prefix("/goal")?;
    // `/goals` is another command, not `/goal s`.
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some(match rest.trim() {
        "" => Command::Status,
        "clear" => Command::Clear,
        line => match split_check(line) {
            None => Command::Set {
                objective: line.to_string(),
                check: None,
            },
            Some((_, "")) => Command::Invalid(format!(
                "{CHECK_FLAG} needs a command: /goal <condition> {CHECK_FLAG} <command>"
            )),
            // The condition is optional with a check: the check says it.
            Some(("", command)) => Command::Set {
                objective: format!("`{command}` exits 0"),
                check: Some(command.to_string()),
            },
            Some((condition, command)) => Command::Set {
                objective: condition.to_string(),
                check: Some(command.to_string()),
            },
        },
    })
}

/// `condition --check command`, split at the first `--check` that stands
/// as a word of its own; the command is the rest of the line, as typed.
fn split_check(line: &str) -> Option<(&str, &str)> {
    let mut from = 0;
    while let Some(found) = line[from..].find(CHECK_FLAG) {
        let at = from + found;
        let after = at + CHECK_FLAG.len();
        let starts_word = line[..at].chars().last().is_none_or(char::is_whitespace);
        let ends_word = line[after..].chars().next().is_none_or(char::is_whitespace);
        if starts_word && ends_word {
            return Some((line[..at].trim(), line[after..].trim()));
        }
        from = after;
    }
    None
}
// ANCHOR_END: command

/// The status word `/goal` shows.
pub fn status_word(status: GoalStatus) -> &'static str {
    match status {
        GoalStatus::Active => "active",
        GoalStatus::Completed => "completed",
        GoalStatus::Blocked => "blocked",
        GoalStatus::Impossible => "impossible (the model gave up; not met)",
        GoalStatus::Cleared => "cleared",
    }
}

/// `/goal`'s lines for `goal`, with the number of trusted entries in its
/// window, the evaluator's name, the stop after `no_progress_limit`
/// continuations without new evidence, and the check's timeout.
pub fn render(
    goal: &Goal,
    evidence: usize,
    evaluator: &str,
    no_progress_limit: usize,
    check_timeout: Duration,
) -> String {
    let mut lines = vec![
        format!("goal:       {}", goal.objective),
        format!("status:     {}", status_word(goal.status)),
        format!("checks:     {}", goal.checks),
        format!(
            "turns:      {}/{} continuation turns used ({} run)",
            goal.continuations, goal.budget, goal.continuations_run
        ),
        format!(
            "evidence:   {} since it was set",
            plural(evidence, "trusted delivery", "trusted deliveries")
        ),
        format!(
            "progress:   {}/{no_progress_limit} continuation turns in a row without new \
             trusted evidence",
            goal.stalled
        ),
    ];
    match &goal.check {
        // With a check, the check is the judge.
        Some(command) => {
            lines.push(format!(
                "check:      `{command}`, run by the harness after each turn \
                 (exit status 0 meets the goal; timeout {} s)",
                check_timeout.as_secs()
            ));
            match &goal.last_check {
                Some(run) => {
                    lines.push(format!(
                        "last run:   {}",
                        run.describe(command, check_timeout)
                    ));
                    lines.push(format!("output:\n{}", run.tail));
                }
                None => lines.push("last run:   not run yet".to_string()),
            }
        }
        None => {
            lines.push(format!("evaluator:  {evaluator}"));
            lines.push(format!(
                "last check: {}",
                goal.last_reason.as_deref().unwrap_or("not checked yet")
            ));
        }
    }
    if let Some(ended) = &goal.ended {
        lines.push(format!("ended:      {ended}"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms_and_the_lines_that_are_not_goal() {
        assert_eq!(parse("/goal"), Some(Command::Status));
        assert_eq!(parse("  /goal   "), Some(Command::Status));
        assert_eq!(parse("/goal clear"), Some(Command::Clear));
        assert_eq!(
            parse("/goal until tests passed"),
            Some(Command::Set {
                objective: "until tests passed".into(),
                check: None
            })
        );
        assert_eq!(parse("/goals"), None);
        assert_eq!(parse("/status"), None);
    }

    #[test]
    fn check_takes_the_rest_of_the_line_as_the_command() {
        assert_eq!(
            parse("/goal the suite is green --check cargo test -- --check-this"),
            Some(Command::Set {
                objective: "the suite is green".into(),
                check: Some("cargo test -- --check-this".into())
            })
        );
        assert_eq!(
            parse("/goal --check make test"),
            Some(Command::Set {
                objective: "`make test` exits 0".into(),
                check: Some("make test".into())
            })
        );
        // Not a word of its own: part of the condition.
        assert_eq!(
            parse("/goal no--check warnings"),
            Some(Command::Set {
                objective: "no--check warnings".into(),
                check: None
            })
        );
        assert!(matches!(
            parse("/goal tests pass --check  "),
            Some(Command::Invalid(_))
        ));
    }
}
