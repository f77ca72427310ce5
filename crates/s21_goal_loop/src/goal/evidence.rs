//! The evidence log: what the harness itself delivered, tagged by origin.
//!
//! A goal is judged only on entries of this log. An entry is written at
//! the moment the harness hands a result to the model — a background
//! command's or a workflow run's notification — (see [`crate::hooks`]:
//! `after_tool_results` and `idle_work`), and its origin
//! is set there, by the code that delivered it. Nothing is ever parsed out
//! of the conversation: a user who types text that looks like a
//! `<task_notification>`, or a model that writes one, adds nothing here,
//! because neither passes through a delivery point.
//!
//! Each entry has a sequence number. A goal remembers the number the next
//! entry would get when it was set ([`EvidenceLog::next_seq`]) and reads
//! only what came after ([`EvidenceLog::since`]), so a result delivered
//! before the goal existed cannot satisfy it.

use std::collections::VecDeque;
use std::fmt;

use crate::background::Finished;
use crate::background::notification::{OUTPUT_CHARS, status_word};
use crate::workflow::report::RunFinished;

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

/// One trusted delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// Its place in the log: 0 for the first entry of the session.
    pub seq: u64,
    pub origin: Origin,
    /// What was observed, as the evaluator reads it.
    pub text: String,
}

// ANCHOR: from_finished
/// The evidence a finished background command gives: its status and its
/// output. The command line itself is left out on purpose — the model
/// wrote it, so it is the model's words, not something the harness
/// observed (`echo done # tests passed` must not pass on its comment).
pub fn from_finished(finished: &Finished) -> (Origin, String) {
    let text = format!(
        "{} {}\n{}",
        finished.id,
        status_word(&finished.status),
        shared::text::limit_output(finished.output.trim_end(), OUTPUT_CHARS)
    );
    (
        Origin::BackgroundTask {
            id: finished.id.clone(),
        },
        text,
    )
}
// ANCHOR_END: from_finished

// ANCHOR: from_run
/// The evidence a finished workflow run gives: its status and its result
/// (or error), as the harness reports them.
pub fn from_run(finished: &RunFinished) -> (Origin, String) {
    let text = format!(
        "{} {}\n{}",
        finished.run_id,
        finished.status.word(),
        shared::text::limit_output(finished.summary.trim_end(), OUTPUT_CHARS)
    );
    (
        Origin::Workflow {
            run_id: finished.run_id.clone(),
        },
        text,
    )
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
    pub fn record(&mut self, origin: Origin, text: String) -> u64 {
        let seq = self.next;
        self.next += 1;
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.pop_front();
        }
        self.entries.push_back(Evidence { seq, origin, text });
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

    fn task(id: &str) -> Origin {
        Origin::BackgroundTask { id: id.into() }
    }

    #[test]
    fn a_window_starts_at_the_sequence_number_it_was_opened_at() {
        let mut log = EvidenceLog::default();
        log.record(task("bg_0001"), "before".into());
        let start = log.next_seq();
        log.record(task("bg_0002"), "after".into());
        let seen = log.since(start);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].text, "after");
        assert_eq!(seen[0].seq, 1);
    }

    #[test]
    fn the_log_keeps_only_the_newest_entries() {
        let mut log = EvidenceLog::default();
        for n in 0..MAX_ENTRIES + 5 {
            log.record(task("bg"), n.to_string());
        }
        let all = log.since(0);
        assert_eq!(all.len(), MAX_ENTRIES);
        assert_eq!(all[0].seq, 5);
        assert_eq!(log.next_seq(), (MAX_ENTRIES + 5) as u64);
    }
}
