//! Progress: a live report on work that runs beside the loop.
//!
//! A notice ([`crate::notice`]) is one line said once. Some work is long
//! and has a state worth watching while it runs — lesson 20's workflow
//! runs fan out to dozens of agents for minutes — and a line per change
//! would bury everything else on the screen. Such work reports a
//! [`Progress`] instead, the whole state each time, under a stable id:
//! a newer report on the same id replaces an older one that nobody has
//! seen yet, so a burst of updates costs the observer one. The reports
//! travel in the same [`Notices`](crate::notice::Notices) queue as notices
//! and reach the observer as
//! [`Event::Progress`](crate::agent::Event::Progress). On a terminal the
//! front end draws one live line per id while the work runs, its clock
//! ticking between reports ([`crate::cli`]); a pipe gets plain lines, and
//! only when something other than the clock and the token count moved.

use std::fmt;
use std::time::Duration;

// ANCHOR: progress
/// The state of one piece of background work, as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Which work this is about (a workflow's run id). Reports with the
    /// same id describe the same work; the display keeps one line per id.
    pub id: String,
    /// What the work is (a workflow's name).
    pub title: String,
    /// The phase it is in, if it names phases.
    pub phase: Option<String>,
    /// Agents (or other units of work) running now.
    pub running: usize,
    /// Units finished so far, from the cache or fresh.
    pub done: usize,
    /// Tokens spent so far.
    pub tokens: u64,
    /// Time since the work started.
    pub elapsed: Duration,
    /// The work has ended: this is its last report.
    pub finished: bool,
}
// ANCHOR_END: progress

impl Progress {
    /// Whether `self` says something `earlier` did not, other than the
    /// clock and the token count, which move all the time. Plain-line
    /// displays print only such reports.
    pub fn differs_in_substance(&self, earlier: &Progress) -> bool {
        self.id != earlier.id
            || self.title != earlier.title
            || self.phase != earlier.phase
            || self.running != earlier.running
            || self.done != earlier.done
            || self.finished != earlier.finished
    }
}

impl Progress {
    /// The report without its clock and end mark:
    /// `review-changes · Verify · 3 running · 12 done · 4.1k tokens`. A
    /// live display adds a clock of its own that ticks between reports.
    pub fn status(&self) -> String {
        let mut status = self.title.clone();
        if let Some(phase) = &self.phase {
            status.push_str(" · ");
            status.push_str(phase);
        }
        status.push_str(&format!(
            " · {} running · {} done · {} tokens",
            self.running,
            self.done,
            compact_count(self.tokens)
        ));
        status
    }
}

impl fmt::Display for Progress {
    /// `review-changes · Verify · 3 running · 12 done · 4.1k tokens · 12s`,
    /// ending in `· finished` on the last report.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} · {}s", self.status(), self.elapsed.as_secs())?;
        if self.finished {
            write!(f, " · finished")?;
        }
        Ok(())
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
    use super::*;

    fn report() -> Progress {
        Progress {
            id: "wf-1".into(),
            title: "review-changes".into(),
            phase: Some("Verify".into()),
            running: 3,
            done: 12,
            tokens: 4_130,
            elapsed: Duration::from_secs(12),
            finished: false,
        }
    }

    #[test]
    fn a_report_reads_as_one_status_line() {
        assert_eq!(
            report().to_string(),
            "review-changes · Verify · 3 running · 12 done · 4.1k tokens · 12s"
        );
        let last = Progress {
            phase: None,
            running: 0,
            tokens: 2_300_000,
            finished: true,
            ..report()
        };
        assert_eq!(
            last.to_string(),
            "review-changes · 0 running · 12 done · 2.3M tokens · 12s · finished"
        );
    }

    #[test]
    fn the_clock_and_the_tokens_alone_are_not_news() {
        let later = Progress {
            tokens: 9_000,
            elapsed: Duration::from_secs(30),
            ..report()
        };
        assert!(!later.differs_in_substance(&report()));
        let moved = Progress {
            done: 13,
            ..report()
        };
        assert!(moved.differs_in_substance(&report()));
    }
}
