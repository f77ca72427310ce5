//! `--check`: a command the harness runs itself, whose exit status alone
//! decides a goal.
//!
//! Every other piece of evidence is a command or a run the *model* chose,
//! and a model can choose `echo tests passed`. A check is chosen by the
//! user when the goal is set (`/goal the suite is green --check cargo
//! test`) and run by the harness, in the workspace, each time a turn
//! ends, with a timeout. Exit status 0 meets the goal; anything else —
//! a non-zero status, a signal, the timeout, a shell that would not start
//! — does not, whatever was printed and whatever an evaluator would say.
//! The output is kept only to show the user (`/goal`) and the model (the
//! next continuation) what failed.

use std::time::Duration;

use shared::tools::Workspace;
use shared::tools::bash::{self, BashOptions, CommandStatus};

/// How long a check may run unless configured otherwise (`[goal]
/// check_timeout_secs`, `GOAL_CHECK_TIMEOUT_SECS`): a test suite's time.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(120);

/// How many characters of a check's output `/goal` and the continuation
/// show: the end, where a test runner writes its summary.
pub const TAIL_CHARS: usize = 1_500;

// ANCHOR: check_run
/// One run of a goal's check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub status: CommandStatus,
    /// The end of what it printed, with the `bash` tool's notes on how it
    /// ended (`[exit status 101]`, `[timed out after 120s; …]`).
    pub tail: String,
}

impl CheckRun {
    /// Whether the goal is met: exit status 0, and nothing else.
    pub fn passed(&self) -> bool {
        self.status == CommandStatus::Succeeded
    }

    /// How it ended, in words, for a reason and for `/goal`.
    pub fn describe(&self, command: &str, timeout: Duration) -> String {
        match self.status {
            CommandStatus::Succeeded => format!("the check `{command}` exited 0"),
            CommandStatus::Failed => format!("the check `{command}` failed"),
            CommandStatus::TimedOut => format!(
                "the check `{command}` timed out after {} s",
                timeout.as_secs()
            ),
            CommandStatus::NotRun => format!("the check `{command}` could not run"),
        }
    }
}

/// Runs `command` in `workspace`, killing it (and all it started) after
/// `timeout`.
pub async fn run(workspace: &Workspace, command: &str, timeout: Duration) -> CheckRun {
    let options = BashOptions {
        timeout,
        ..BashOptions::default()
    };
    let report = bash::execute(workspace, command, &options).await;
    CheckRun {
        status: report.status,
        tail: tail(report.text.trim_end(), TAIL_CHARS),
    }
}
// ANCHOR_END: check_run

/// The last `max_chars` characters of `text`, marked when cut.
pub fn tail(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let kept: String = text.chars().skip(count - max_chars).collect();
    format!("…{kept}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_end_and_says_it_was_cut() {
        assert_eq!(tail("short", 10), "short");
        assert_eq!(tail("0123456789ünd", 4), "…9ünd");
    }
}
