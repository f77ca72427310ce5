//! The scheduler: a [`Schedule`] brought to life.
//!
//! Three parts, decoupled by a queue, as in the course:
//!
//! * **The ticker** is a tokio task that sleeps until the next minute mark
//!   (by the [`Clock`]), ticks the schedule and queues what came due. It
//!   runs whether or not the agent is busy.
//! * **The queue** holds fired jobs until the agent can take them.
//! * **Delivery** is [`CronScheduler::next_due`], which the lesson's
//!   `idle_work` hook awaits. The REPL races it against the user's next
//!   line, so a job is delivered only when the agent is idle, and a job that
//!   fires during a turn waits for the turn to end.
//!
//! Durable jobs are loaded from `.scheduled_tasks.json` when the scheduler
//! is made and saved after every change to them, atomically. The ticker is
//! started lazily, by the first call that happens inside a tokio runtime,
//! and stopped when the scheduler is dropped.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use jiff::ZonedDateTime;
use shared::notice::Notices;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::{Clock, CronError, CronJob, Schedule, store};

/// The tag of this lesson's notices.
pub const TAG: &str = "cron";

/// Where the durable jobs file is copied when some of it could not be
/// loaded.
pub const BACKUP_FILE_NAME: &str = ".scheduled_tasks.json.bak";

/// The scheduler of one agent. Clones share it.
#[derive(Clone)]
pub struct CronScheduler {
    inner: Arc<Inner>,
}

struct Inner {
    schedule: Mutex<Schedule>,
    queue: Mutex<VecDeque<CronJob>>,
    /// Woken when a job joins the queue.
    due: Notify,
    clock: Arc<dyn Clock>,
    /// `.scheduled_tasks.json` in the workspace.
    store: PathBuf,
    notices: Notices,
    ticker: Mutex<Option<JoinHandle<()>>>,
}

/// A job and when it fires next (`None`: never again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub job: CronJob,
    pub next: Option<ZonedDateTime>,
}

/// Why a scheduling request was refused.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("invalid cron expression {cron:?}: {source}")]
    Invalid { cron: String, source: CronError },
    #[error("the prompt is empty; say what the agent should do when the job fires")]
    EmptyPrompt,
    #[error("no cron job {id}; {}", known_jobs(.known))]
    Unknown { id: String, known: Vec<String> },
    #[error("could not save {}: {source}; nothing was changed", .path.display())]
    Save {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn known_jobs(known: &[String]) -> String {
    if known.is_empty() {
        "no jobs are scheduled".to_string()
    } else {
        format!("the jobs are: {}", known.join(", "))
    }
}

impl CronScheduler {
    /// A scheduler for the workspace at `root`, reading the time from
    /// `clock`. Durable jobs are loaded from `.scheduled_tasks.json`; each
    /// entry that cannot be loaded is reported as a notice and skipped.
    pub fn new(root: &Path, clock: Arc<dyn Clock>, notices: Notices) -> Self {
        let store_path = root.join(store::FILE_NAME);
        let (jobs, problems) = store::load(&store_path);
        for problem in &problems {
            notices.emit(TAG, format!("skipped: {problem}"));
        }
        // The next save rewrites the file with the jobs that loaded. What
        // could not be read may be a person's edit worth fixing, so a copy
        // of the file as it was is kept beside it.
        if !problems.is_empty() {
            let backup = root.join(BACKUP_FILE_NAME);
            match std::fs::copy(&store_path, &backup) {
                Ok(_) => notices.emit(
                    TAG,
                    format!("kept a copy of {} as {BACKUP_FILE_NAME}", store::FILE_NAME),
                ),
                Err(error) => notices.emit(
                    TAG,
                    format!("could not keep a copy of {}: {error}", store::FILE_NAME),
                ),
            }
        }
        let mut schedule = Schedule::new();
        let mut loaded = 0;
        for job in jobs {
            match schedule.add(job) {
                Ok(_) => loaded += 1,
                Err(error) => notices.emit(TAG, format!("skipped: {error}")),
            }
        }
        if loaded > 0 {
            notices.emit(
                TAG,
                format!(
                    "loaded {} from {}",
                    shared::text::plural(loaded, "durable job", "durable jobs"),
                    store::FILE_NAME
                ),
            );
        }
        Self {
            inner: Arc::new(Inner {
                schedule: Mutex::new(schedule),
                queue: Mutex::new(VecDeque::new()),
                due: Notify::new(),
                clock,
                store: store_path,
                notices,
                ticker: Mutex::new(None),
            }),
        }
    }

    // ANCHOR: schedule
    /// Adds a job. The expression is checked first; a durable job is saved
    /// before the call returns (and not added if it cannot be).
    pub fn schedule(
        &self,
        cron: &str,
        prompt: &str,
        recurring: bool,
        durable: bool,
    ) -> Result<Listed, ScheduleError> {
        if prompt.trim().is_empty() {
            return Err(ScheduleError::EmptyPrompt);
        }
        // Bring the schedule up to the present first: a new job fires from
        // the next minute mark on, never for the minute already under way.
        self.tick();
        let invalid = |source| ScheduleError::Invalid {
            cron: cron.to_string(),
            source,
        };
        let mut schedule = self.inner.schedule();
        let job = schedule
            .add(CronJob::new(cron.trim(), prompt.trim(), recurring, durable))
            .map_err(invalid)?;
        if durable && let Err(error) = self.save(&schedule) {
            schedule.cancel(&job.id);
            return Err(error);
        }
        let next = schedule.next_fire(&job.id, &self.inner.clock.now());
        drop(schedule);
        self.ensure_ticking();
        Ok(Listed { job, next })
    }
    // ANCHOR_END: schedule

    /// Removes a job (from disk too, if it was durable).
    pub fn cancel(&self, id: &str) -> Result<CronJob, ScheduleError> {
        let mut schedule = self.inner.schedule();
        let Some(job) = schedule.cancel(id) else {
            return Err(ScheduleError::Unknown {
                id: id.to_string(),
                known: schedule.jobs().map(|job| job.id.clone()).collect(),
            });
        };
        if job.durable
            && let Err(error) = self.save(&schedule)
        {
            // Put it back: the file still has it.
            let _ = schedule.add(job);
            return Err(error);
        }
        Ok(job)
    }

    /// Every job, in the order they were scheduled, with its next fire time.
    pub fn list(&self) -> Vec<Listed> {
        let now = self.inner.clock.now();
        let schedule = self.inner.schedule();
        schedule
            .jobs()
            .map(|job| Listed {
                job: job.clone(),
                next: schedule.next_fire(&job.id, &now),
            })
            .collect()
    }

    // ANCHOR: tick
    /// Ticks the schedule at the clock's time and queues what came due.
    /// Returns how many jobs were queued. The ticker calls this at every
    /// minute mark; tests call it after moving a manual clock.
    pub fn tick(&self) -> usize {
        let now = self.inner.clock.now();
        let mut schedule = self.inner.schedule();
        let fired = schedule.tick(&now);
        // A durable one-shot job that fired is gone from the schedule, and
        // must go from the file too, or the next session would fire it again.
        if fired.iter().any(|job| job.durable && !job.recurring)
            && let Err(error) = self.save(&schedule)
        {
            self.inner.notices.emit(TAG, error.to_string());
        }
        drop(schedule);
        let count = fired.len();
        if count > 0 {
            let mut queue = self.inner.queue();
            for job in fired {
                self.inner
                    .notices
                    .emit(TAG, format!("{} fired: {}", job.id, job.prompt));
                queue.push_back(job);
            }
            drop(queue);
            self.inner.due.notify_one();
        }
        count
    }
    // ANCHOR_END: tick

    // ANCHOR: next_due
    /// Waits for the next fired job and takes it off the queue. Cancel-safe:
    /// a job is taken only in the poll that returns it. Starts the ticker if
    /// it is not running yet.
    pub async fn next_due(&self) -> CronJob {
        self.ensure_ticking();
        loop {
            let due = self.inner.due.notified();
            tokio::pin!(due);
            due.as_mut().enable();
            if let Some(job) = self.inner.queue().pop_front() {
                return job;
            }
            due.await;
        }
    }
    // ANCHOR_END: next_due

    /// The jobs fired and not yet delivered.
    pub fn queued(&self) -> Vec<CronJob> {
        self.inner.queue().iter().cloned().collect()
    }

    // ANCHOR: ticker
    /// Starts the ticker, once, if called inside a tokio runtime. It ticks
    /// at once (so a durable job due this minute fires at start-up), then at
    /// every minute mark the clock reaches.
    pub fn ensure_ticking(&self) {
        let mut ticker = self.inner.ticker();
        if ticker.is_some() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        // The task holds the scheduler weakly, so dropping the agent ends
        // it (and `Drop` aborts it while it sleeps).
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        *ticker = Some(tokio::spawn(async move {
            loop {
                let wait = {
                    let Some(inner) = weak.upgrade() else { return };
                    CronScheduler { inner }.tick();
                    let Some(inner) = weak.upgrade() else { return };
                    Schedule::until_next_minute(&inner.clock.now())
                };
                tokio::time::sleep(wait).await;
            }
        }));
    }
    // ANCHOR_END: ticker

    /// Writes the durable jobs to `.scheduled_tasks.json`.
    fn save(&self, schedule: &Schedule) -> Result<(), ScheduleError> {
        store::save(&self.inner.store, &schedule.durable_jobs()).map_err(|source| {
            ScheduleError::Save {
                path: self.inner.store.clone(),
                source,
            }
        })
    }
}

impl Inner {
    fn schedule(&self) -> MutexGuard<'_, Schedule> {
        self.schedule.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn queue(&self) -> MutexGuard<'_, VecDeque<CronJob>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ticker(&self) -> MutexGuard<'_, Option<JoinHandle<()>>> {
        self.ticker.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(ticker) = self
            .ticker
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            ticker.abort();
        }
    }
}
