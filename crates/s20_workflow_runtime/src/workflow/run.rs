//! One run's shared state: its journal, what it has spent, and how it
//! reports its progress.
//!
//! Every primitive of a run updates the same [`Tally`], under one lock,
//! and reports the whole state as one [`Progress`] after each change: an
//! agent starting, an agent finishing (fresh or from the journal), a new
//! phase. The front end draws the reports of one run as one live line on
//! a terminal and as plain lines elsewhere; a burst of reports costs it
//! only the newest (see [`shared::progress`]).
//!
//! The elapsed time comes from tokio's clock, so a test that pauses time
//! sees the same figures on every run.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use shared::CancellationToken;
use shared::notice::Notices;
use shared::progress::Progress;
use shared::sync::LockExt;
use tokio::time::Instant;

use super::agent::AgentRunner;
use super::journal::{Journal, Occurrences};
use super::registry::WorkflowRegistry;

/// What a run has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub phase: Option<String>,
    /// Agents running now.
    pub running: usize,
    /// Agent calls that ran (called the model) in this attempt.
    pub agents_run: usize,
    /// Agent calls answered from the journal.
    pub agents_cached: usize,
    /// Agent calls that finished with a result, fresh or cached.
    pub done: usize,
    pub tokens: u64,
    pub tool_calls: usize,
}

/// One run, shared by its context handles.
pub struct Run {
    pub id: String,
    /// The workflow's name.
    pub workflow: String,
    pub journal: Journal,
    /// How often each call has been issued in this attempt, for its key.
    pub occurrences: Occurrences,
    pub agents: Arc<AgentRunner>,
    /// For nested workflows.
    pub registry: WorkflowRegistry,
    pub notices: Notices,
    pub cancel: CancellationToken,
    started: Instant,
    tally: Mutex<Tally>,
}

impl Run {
    /// A run that starts now.
    pub fn new(
        id: String,
        workflow: String,
        journal: Journal,
        agents: Arc<AgentRunner>,
        registry: WorkflowRegistry,
        notices: Notices,
    ) -> Self {
        Self {
            id,
            workflow,
            journal,
            occurrences: Occurrences::default(),
            agents,
            registry,
            notices,
            cancel: CancellationToken::new(),
            started: Instant::now(),
            tally: Mutex::new(Tally::default()),
        }
    }

    /// The same run, cancelled by `cancel`.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Changes the tally and reports the new state.
    pub fn update(&self, change: impl FnOnce(&mut Tally)) {
        let report = {
            let mut tally = self.tally();
            change(&mut tally);
            self.progress(&tally, false)
        };
        self.notices.progress(report);
    }

    /// The tally as it is now.
    pub fn snapshot(&self) -> Tally {
        self.tally().clone()
    }

    /// Time since the run started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Reports the last state of the run.
    pub fn report_finished(&self) {
        let report = self.progress(&self.tally(), true);
        self.notices.progress(report);
    }

    // ANCHOR: progress
    /// `review-changes · Verify · 3 running · 12 done`, with the tokens
    /// as the meter: they move with every streamed reply, so they are no
    /// news on their own.
    fn progress(&self, tally: &Tally, finished: bool) -> Progress {
        let mut status = self.workflow.clone();
        if let Some(phase) = &tally.phase {
            status.push_str(" · ");
            status.push_str(phase);
        }
        status.push_str(&format!(
            " · {} running · {} done",
            tally.running, tally.done
        ));
        Progress {
            id: self.id.clone(),
            status,
            meter: format!("{} tokens", compact_count(tally.tokens)),
            elapsed: self.elapsed(),
            finished,
        }
    }
    // ANCHOR_END: progress

    fn tally(&self) -> MutexGuard<'_, Tally> {
        self.tally.locked()
    }
}

/// `950`, `4.1k`, `2.3M`: a count short enough for a status line.
fn compact_count(count: u64) -> String {
    // The casts only feed one decimal of a display string.
    #[allow(clippy::cast_precision_loss)]
    let value = count as f64;
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", value / 1e3),
        _ => format!("{:.1}M", value / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::compact_count;

    #[test]
    fn token_counts_are_short_enough_for_a_status_line() {
        assert_eq!(compact_count(950), "950");
        assert_eq!(compact_count(4_130), "4.1k");
        assert_eq!(compact_count(2_300_000), "2.3M");
    }
}
