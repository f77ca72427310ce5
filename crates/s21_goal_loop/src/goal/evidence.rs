//! The evidence log: what the harness itself delivered and observed,
//! tagged by origin.
//!
//! A goal is judged only on entries of this log. An entry is written at
//! the moment the harness hands a result to the model — a background
//! command's or a workflow run's notification — (see [`crate::hooks`]:
//! `after_tool_results` and `idle_work`), and everything in it is set
//! there, by the code that delivered it: the origin, what ran, how it
//! ended (the exit status lesson 13's background manager saw, the status
//! lesson 20's runtime gave the run) and what it printed. Nothing is ever
//! parsed out of the conversation: a user who types text that looks like
//! a `<task_notification>`, or a model that writes one, adds nothing here,
//! because neither passes through a delivery point.
//!
//! What the model *can* do is choose what runs: `echo tests passed` in
//! the background is a real command that really printed those words. So
//! the entry keeps the command beside the output, for a judge that reads
//! it, and the outcome, so that the output of a command that failed
//! (`echo tests passed; exit 1`) never reads as success. Only a goal's own
//! `--check`, which the harness runs itself, is beyond the model's choice
//! (see [`super::check`]).
//!
//! Each entry has a sequence number. A goal remembers the number the next
//! entry would get when it was set ([`EvidenceLog::next_seq`]) and reads
//! only what came after ([`EvidenceLog::since`]), so a result delivered
//! before the goal existed cannot satisfy it.

use std::collections::VecDeque;
use std::fmt;

use serde::Serialize;
use shared::tools::bash::CommandStatus;

use crate::background::Finished;
use crate::background::notification::{OUTPUT_CHARS, status_word};
use crate::workflow::report::RunFinished;
use crate::workflow::store::RunStatus;

/// How many entries the log keeps. Older ones are dropped: a goal that
/// needs more than the last couple of hundred results to decide is better
/// served by a summary than by a longer log.
pub const MAX_ENTRIES: usize = 200;

// ANCHOR: origin
/// Who delivered an entry. Every variant is a channel the harness owns;
/// there is deliberately no variant for the user or the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A background command's result (lesson 13's `<task_notification>`),
    /// after a round's tool results or as a turn of its own.
    BackgroundTask { id: String },
    /// A workflow run's end (lesson 20), through the same channel.
    Workflow { run_id: String },
}
// ANCHOR_END: origin

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BackgroundTask { id } => write!(f, "background task {id}"),
            Self::Workflow { run_id } => write!(f, "workflow run {run_id}"),
        }
    }
}

// ANCHOR: evidence
/// How the work behind an entry ended, as the harness observed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Exit status 0 for a command; `completed` for a workflow run.
    pub succeeded: bool,
    /// The harness's word for it: `completed`, `failed`, `timed_out`, …
    pub status: &'static str,
}

/// One trusted delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// Its place in the log: 0 for the first entry of the session.
    pub seq: u64,
    pub origin: Origin,
    /// What ran: a background command's line (which the model wrote, so
    /// it is shown to a judge but never matched as evidence), or the
    /// workflow's name.
    pub command: String,
    pub outcome: Outcome,
    /// What it printed (or the run's result), capped.
    pub output: String,
}
// ANCHOR_END: evidence

impl Evidence {
    /// The entry as the model judge is shown it: every field as data.
    pub fn to_json(&self) -> serde_json::Value {
        #[derive(Serialize)]
        struct Shown<'a> {
            seq: u64,
            origin: String,
            command: &'a str,
            status: &'a str,
            succeeded: bool,
            output: &'a str,
        }
        serde_json::to_value(Shown {
            seq: self.seq,
            origin: self.origin.to_string(),
            command: &self.command,
            status: self.outcome.status,
            succeeded: self.outcome.succeeded,
            output: &self.output,
        })
        .unwrap_or_default()
    }
}

/// What an entry holds besides its number: filled in by the delivery
/// point, never by anything the model or the user wrote as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub origin: Origin,
    pub command: String,
    pub outcome: Outcome,
    pub output: String,
}

// ANCHOR: from_finished
/// The evidence a finished background command gives: the command line,
/// the exit status the background manager observed and the output.
pub fn from_finished(finished: &Finished) -> Delivered {
    Delivered {
        origin: Origin::BackgroundTask {
            id: finished.id.clone(),
        },
        command: finished.command.clone(),
        outcome: Outcome {
            succeeded: finished.status == CommandStatus::Succeeded,
            status: status_word(&finished.status),
        },
        output: shared::text::limit_output(finished.output.trim_end(), OUTPUT_CHARS),
    }
}
// ANCHOR_END: from_finished

// ANCHOR: from_run
/// The evidence a finished workflow run gives: the workflow, the run's
/// status and its result (or error), as the harness reports them.
pub fn from_run(finished: &RunFinished) -> Delivered {
    Delivered {
        origin: Origin::Workflow {
            run_id: finished.run_id.clone(),
        },
        command: format!("workflow {}", finished.workflow),
        outcome: Outcome {
            succeeded: finished.status == RunStatus::Completed,
            status: finished.status.word(),
        },
        output: shared::text::limit_output(finished.summary.trim_end(), OUTPUT_CHARS),
    }
}
// ANCHOR_END: from_run

// ANCHOR: log
/// The session's trusted deliveries, oldest first.
#[derive(Debug, Default)]
pub struct EvidenceLog {
    next: u64,
    entries: VecDeque<Evidence>,
}

impl EvidenceLog {
    /// Appends a delivery and returns its sequence number.
    pub fn record(&mut self, delivered: Delivered) -> u64 {
        let seq = self.next;
        self.next += 1;
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.pop_front();
        }
        let Delivered {
            origin,
            command,
            outcome,
            output,
        } = delivered;
        self.entries.push_back(Evidence {
            seq,
            origin,
            command,
            outcome,
            output,
        });
        seq
    }

    /// The number the next entry will get: where a goal set now starts
    /// reading.
    pub fn next_seq(&self) -> u64 {
        self.next
    }

    /// The entries numbered `start` or later, oldest first.
    pub fn since(&self, start: u64) -> Vec<Evidence> {
        self.entries
            .iter()
            .filter(|entry| entry.seq >= start)
            .cloned()
            .collect()
    }
}
// ANCHOR_END: log

#[cfg(test)]
mod tests {
    use super::*;

    fn task(output: &str) -> Delivered {
        Delivered {
            origin: Origin::BackgroundTask { id: "bg".into() },
            command: "true".into(),
            outcome: Outcome {
                succeeded: true,
                status: "completed",
            },
            output: output.into(),
        }
    }

    #[test]
    fn a_window_starts_at_the_sequence_number_it_was_opened_at() {
        let mut log = EvidenceLog::default();
        log.record(task("before"));
        let start = log.next_seq();
        log.record(task("after"));
        let seen = log.since(start);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].output, "after");
        assert_eq!(seen[0].seq, 1);
    }

    #[test]
    fn the_log_keeps_only_the_newest_entries() {
        let mut log = EvidenceLog::default();
        for n in 0..MAX_ENTRIES + 5 {
            log.record(task(&n.to_string()));
        }
        let all = log.since(0);
        assert_eq!(all.len(), MAX_ENTRIES);
        assert_eq!(all[0].seq, 5);
        assert_eq!(log.next_seq(), (MAX_ENTRIES + 5) as u64);
    }
}
