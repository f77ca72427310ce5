//! `/goal`: the user's three commands, answered by the harness.
//!
//! `/goal <condition>` sets a goal, `/goal` shows it, `/goal clear` drops
//! it. The front end hands every `/` line to
//! [`shared::hooks::Hooks::slash_command`] before any turn, so none of them
//! enters the history: the line that sets a goal cannot be read back as
//! evidence for it.

use shared::text::plural;

use super::{Goal, GoalStatus};

// ANCHOR: command
/// A `/goal` line, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/goal`: show the goal.
    Status,
    /// `/goal clear`: drop the goal and its queued continuation.
    Clear,
    /// `/goal <condition>`: set a goal, replacing any other.
    Set(String),
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
        condition => Command::Set(condition.to_string()),
    })
}
// ANCHOR_END: command

/// The status word `/goal` shows.
pub fn status_word(status: GoalStatus) -> &'static str {
    match status {
        GoalStatus::Active => "active",
        GoalStatus::Completed => "completed",
        GoalStatus::Blocked => "blocked (budget spent)",
        GoalStatus::Cleared => "cleared",
    }
}

/// `/goal`'s lines for `goal`, with the number of trusted entries in its
/// window and the evaluator's name.
pub fn render(goal: &Goal, evidence: usize, evaluator: &str) -> String {
    [
        format!("goal:       {}", goal.objective),
        format!("status:     {}", status_word(goal.status)),
        format!("checks:     {}", goal.checks),
        format!(
            "turns:      {}/{} continuation turns used",
            goal.continuations, goal.budget
        ),
        format!(
            "evidence:   {} since it was set",
            plural(evidence, "trusted delivery", "trusted deliveries")
        ),
        format!("evaluator:  {evaluator}"),
        format!(
            "last check: {}",
            goal.last_reason.as_deref().unwrap_or("not checked yet")
        ),
    ]
    .join("\n")
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
            Some(Command::Set("until tests passed".into()))
        );
        assert_eq!(parse("/goals"), None);
        assert_eq!(parse("/status"), None);
    }
}
