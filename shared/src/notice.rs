//! Notices: one-line reports from a lesson's machinery to the person
//! watching the loop.
//!
//! Mechanisms that run inside hooks — compaction, memory, recovery, the
//! subagent — have things worth saying ("summarised 40 messages", "retrying
//! in 2 s"), but hooks have no access to the terminal, and must not print
//! on their own: a line written in the middle of a streamed reply garbles
//! it, and a test cannot see what was printed. So they *emit* a [`Notice`]
//! into a [`Notices`] handle they were given, and the loop hands every
//! notice to its [`Observer`](crate::agent::Observer) as
//! [`Event::Notice`](crate::agent::Event::Notice), as soon as it is emitted
//! — even while a hook is still awaiting something. The terminal shows it
//! dim on standard error, after ending any half-written line; a test
//! collects it.
//!
//! Long work that has a state to watch rather than a thing to say (lesson
//! 20's workflow runs) reports a [`Progress`] through the same handle; see
//! [`crate::progress`].
//!
//! A [`Notices`] handle is cheap to clone and can be used from any thread
//! or task. Emitting never blocks and never fails: with nobody draining,
//! notices wait in the queue (a bounded number of them, see
//! [`MAX_QUEUED`]).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::progress::Progress;
use crate::sync::LockExt;

/// How many undelivered notices are kept; older ones are dropped first. A
/// harness that is never run by a loop must not grow without bound.
pub const MAX_QUEUED: usize = 1_000;

// ANCHOR: notice
/// One report: a short tag saying which mechanism speaks (`"compact"`,
/// `"recovery"`, `"memory"` …) and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Which mechanism speaks, such as `"compact"`.
    pub tag: String,
    /// What it says, on one line.
    pub text: String,
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.tag, self.text)
    }
}
// ANCHOR_END: notice

/// Where notices are emitted; clones share one queue.
#[derive(Clone, Default)]
pub struct Notices {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    queue: Mutex<VecDeque<Notice>>,
    /// Unseen progress reports, at most one per id (the newest).
    progress: Mutex<Vec<Progress>>,
    ready: Notify,
}

impl fmt::Debug for Notices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notices")
            .field("queued", &self.queue().len())
            .finish()
    }
}

impl Notices {
    /// A new, empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a notice for the loop's observer.
    pub fn emit(&self, tag: impl Into<String>, text: impl Into<String>) {
        let notice = Notice {
            tag: tag.into(),
            text: text.into(),
        };
        tracing::debug!("{notice}");
        {
            let mut queue = self.queue();
            if queue.len() >= MAX_QUEUED {
                queue.pop_front();
            }
            queue.push_back(notice);
        }
        self.inner.ready.notify_one();
    }

    /// Takes every notice queued so far, oldest first.
    pub fn take(&self) -> Vec<Notice> {
        self.queue().drain(..).collect()
    }

    /// Queues a progress report for the observer. An unseen report with the
    /// same id is replaced: only the newest state is worth showing.
    pub fn progress(&self, report: Progress) {
        {
            let mut pending = self.pending_progress();
            match pending.iter_mut().find(|old| old.id == report.id) {
                Some(old) => *old = report,
                None => pending.push(report),
            }
        }
        self.inner.ready.notify_one();
    }

    /// Takes every unseen progress report, in the order their ids first
    /// reported.
    pub fn take_progress(&self) -> Vec<Progress> {
        std::mem::take(&mut *self.pending_progress())
    }

    /// Waits until a notice or a progress report has been queued since the
    /// last wait returned (or one is already queued). Cancel-safe.
    pub async fn ready(&self) {
        if !self.queue().is_empty() || !self.pending_progress().is_empty() {
            return;
        }
        self.inner.ready.notified().await;
    }

    fn pending_progress(&self) -> std::sync::MutexGuard<'_, Vec<Progress>> {
        self.inner.progress.locked()
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Notice>> {
        self.inner.queue.locked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_queue_and_take_empties_it() {
        let notices = Notices::new();
        let clone = notices.clone();
        clone.emit("compact", "one");
        notices.emit("memory", "two");
        let taken = notices.take();
        assert_eq!(
            taken.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["[compact] one", "[memory] two"]
        );
        assert!(clone.take().is_empty());
    }

    #[test]
    fn an_undrained_queue_keeps_only_the_newest() {
        let notices = Notices::new();
        for n in 0..MAX_QUEUED + 5 {
            notices.emit("t", n.to_string());
        }
        let taken = notices.take();
        assert_eq!(taken.len(), MAX_QUEUED);
        assert_eq!(taken[0].text, "5");
    }

    #[test]
    fn a_newer_report_replaces_an_unseen_one_on_the_same_id() {
        let notices = Notices::new();
        let report = |id: &str, done: usize| Progress {
            id: id.into(),
            status: format!("{done} done"),
            meter: String::new(),
            elapsed: std::time::Duration::ZERO,
            finished: false,
        };
        notices.progress(report("a", 1));
        notices.progress(report("b", 1));
        notices.progress(report("a", 2));
        let taken = notices.take_progress();
        assert_eq!(taken, [report("a", 2), report("b", 1)]);
        assert!(notices.take_progress().is_empty());
        assert!(notices.take().is_empty(), "progress is not a notice");
    }

    #[tokio::test]
    async fn ready_wakes_for_a_notice_emitted_from_another_task() {
        let notices = Notices::new();
        let sender = notices.clone();
        let waiter = tokio::spawn(async move {
            notices.ready().await;
            notices.take()
        });
        tokio::task::yield_now().await;
        sender.emit("t", "hello");
        let taken = waiter.await.unwrap();
        assert_eq!(taken.len(), 1);
    }
}
