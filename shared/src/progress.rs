//! Progress: a live report on work that runs beside the loop.
//!
//! A notice ([`crate::notice`]) is one line said once. Some work is long
//! and has a state worth watching while it runs (lesson 20's workflow
//! runs fan out to dozens of agents for minutes), and a line per change
//! would bury everything else on the screen. Such work reports a
//! [`Progress`] instead, the whole state each time, under a stable id:
//! a newer report on the same id replaces an older one that nobody has
//! seen yet, so a burst of updates costs the observer one. The reports
//! travel in the same [`Notices`](crate::notice::Notices) queue as notices
//! and reach the observer as
//! [`Event::Progress`](crate::agent::Event::Progress). On a terminal the
//! front end draws one live line per id while the work runs, its clock
//! ticking between reports ([`crate::cli`]); a pipe gets plain lines, and
//! only when the [`status`](Progress::status) moved.
//!
//! What the status says is the reporting lesson's business: this type
//! knows only an id, two pieces of text, a clock and an end.

use std::fmt;
use std::time::Duration;

// ANCHOR: progress
/// The state of one piece of background work, as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Which work this is about (a workflow's run id). Reports with the
    /// same id describe the same work; the display keeps one line per id.
    pub id: String,
    /// What the work is doing, in words that change only when something
    /// happened: `review-changes · Verify · 3 running · 12 done`.
    pub status: String,
    /// A measure that moves all the time, shown after the status but never
    /// news on its own (`4.1k tokens`); empty for none.
    pub meter: String,
    /// Time since the work started.
    pub elapsed: Duration,
    /// The work has ended: this is its last report.
    pub finished: bool,
}
// ANCHOR_END: progress

impl Progress {
    /// Whether `self` says something `earlier` did not, other than the
    /// clock and the meter, which move all the time. Plain-line displays
    /// print only such reports.
    pub fn differs_in_substance(&self, earlier: &Progress) -> bool {
        self.id != earlier.id || self.status != earlier.status || self.finished != earlier.finished
    }

    /// The report without its clock and end mark:
    /// `review-changes · Verify · 3 running · 12 done · 4.1k tokens`. A
    /// live display adds a clock of its own that ticks between reports.
    pub fn text(&self) -> String {
        if self.meter.is_empty() {
            self.status.clone()
        } else {
            format!("{} · {}", self.status, self.meter)
        }
    }
}

impl fmt::Display for Progress {
    /// `review-changes · Verify · 3 running · 12 done · 4.1k tokens · 12s`,
    /// ending in `· finished` on the last report.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} · {}s", self.text(), self.elapsed.as_secs())?;
        if self.finished {
            write!(f, " · finished")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Progress {
        Progress {
            id: "job-1".into(),
            status: "indexing · 3 of 12 files".into(),
            meter: "40 MB".into(),
            elapsed: Duration::from_secs(12),
            finished: false,
        }
    }

    #[test]
    fn a_report_reads_as_one_status_line() {
        assert_eq!(
            report().to_string(),
            "indexing · 3 of 12 files · 40 MB · 12s"
        );
        let last = Progress {
            meter: String::new(),
            finished: true,
            ..report()
        };
        assert_eq!(
            last.to_string(),
            "indexing · 3 of 12 files · 12s · finished"
        );
    }

    #[test]
    fn the_clock_and_the_meter_alone_are_not_news() {
        let later = Progress {
            meter: "90 MB".into(),
            elapsed: Duration::from_secs(30),
            ..report()
        };
        assert!(!later.differs_in_substance(&report()));
        let moved = Progress {
            status: "indexing · 4 of 12 files".into(),
            ..report()
        };
        assert!(moved.differs_in_substance(&report()));
        let ended = Progress {
            finished: true,
            ..report()
        };
        assert!(ended.differs_in_substance(&report()));
    }
}
