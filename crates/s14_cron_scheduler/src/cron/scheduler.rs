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
//! is made. Every change to them is a read-modify-write of that file under
//! its lock (see [`store`]), so another session in the same workspace keeps
//! its jobs; ids are decided under the same lock, after every id in the
//! file, so two sessions never give one id to two durable jobs. A durable one-shot
//! job leaves the file when it is delivered, not when it fires: a crash in
//! between loses nothing. The ticker is started lazily, by the first call
//! that happens inside a tokio runtime, and stopped when the scheduler is
//! dropped.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use jiff::ZonedDateTime;
use shared::notice::Notices;
use shared::sync::LockExt;
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
    /// The problems last reported about the file, so that the same ones
    /// are not reported again.
    reported: Mutex<Vec<String>>,
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
    #[error("could not update {}: {source}; nothing was changed", .path.display())]
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
        // The next change rewrites the file with the jobs that load. What
        // could not be read may be a person's edit worth fixing, so a copy
        // of the file as it was is kept beside it.
        if !problems.is_empty() {
            keep_backup(&store_path, &notices);
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
                reported: Mutex::new(problems),
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
        let job = CronJob::new(cron.trim(), prompt.trim(), recurring, durable);
        job.expr().map_err(invalid)?;
        let mut schedule = self.inner.schedule();
        let job = if durable {
            // The id is decided under the file's lock, after every id
            // another session saved, and the job joins the file as it is
            // now, not as this session last saw it.
            let _lock = self.lock()?;
            let mut on_disk = self.read();
            schedule.continue_after(on_disk.iter().map(|job| job.id.as_str()));
            let job = schedule.add(job).map_err(invalid)?;
            on_disk.push(job.clone());
            if let Err(error) = self.write(&on_disk) {
                schedule.cancel(&job.id);
                return Err(error);
            }
            job
        } else {
            // A session-only job is never written, so it takes no lock;
            // its id still comes after every id in the file, so that it
            // never names a job another session saved before it.
            let (on_disk, _) = store::load(&self.inner.store);
            schedule.continue_after(on_disk.iter().map(|job| job.id.as_str()));
            schedule.add(job).map_err(invalid)?
        };
        let next = schedule.next_fire(&job.id, &self.inner.clock.now());
        drop(schedule);
        self.ensure_ticking();
        Ok(Listed { job, next })
    }
    // ANCHOR_END: schedule

    // ANCHOR: cancel
    /// Removes a job: from the schedule, from the queue if it fired and was
    /// not delivered yet, and from the file, whichever session saved it.
    pub fn cancel(&self, id: &str) -> Result<CronJob, ScheduleError> {
        let mut schedule = self.inner.schedule();
        let mut queue = self.inner.queue();
        let in_schedule = schedule.cancel(id);
        let in_queue = match queue.iter().position(|job| job.id == id) {
            Some(index) => queue.remove(index),
            None => None,
        };
        let in_memory = in_schedule.clone().or_else(|| in_queue.clone());
        let mut on_disk = None;
        if in_memory.as_ref().is_none_or(|job| job.durable) {
            // Read-modify-write: the other jobs in the file stay as they are.
            let changed = self.lock().and_then(|_lock| {
                let mut jobs = self.read();
                let Some(index) = jobs.iter().position(|job| job.id == id) else {
                    return Ok(None);
                };
                let job = jobs.remove(index);
                self.write(&jobs).map(|()| Some(job))
            });
            match changed {
                Ok(job) => on_disk = job,
                Err(error) => {
                    // Put it back: the file still has it.
                    if let Some(job) = in_schedule {
                        let _ = schedule.add(job);
                    }
                    if let Some(job) = in_queue {
                        queue.push_front(job);
                    }
                    return Err(error);
                }
            }
        }
        in_memory.or(on_disk).ok_or_else(|| ScheduleError::Unknown {
            id: id.to_string(),
            known: schedule.jobs().map(|job| job.id.clone()).collect(),
        })
    }
    // ANCHOR_END: cancel

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
        // A durable one-shot job that fired is gone from the schedule, but
        // stays in the file until it is delivered (see `next_due`).
        let fired = schedule.tick(&now);
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
    /// Waits for the next fired job and takes it off the queue: this is its
    /// delivery. Cancel-safe: a job is taken only in the poll that returns
    /// it. Starts the ticker if it is not running yet.
    ///
    /// A durable one-shot job leaves the file here, as it is delivered: had
    /// it left when it fired, a crash before the agent took it would lose
    /// it. If the file cannot be updated, the job is still delivered, and a
    /// notice says it may fire again in a later session.
    pub async fn next_due(&self) -> CronJob {
        self.ensure_ticking();
        loop {
            let due = self.inner.due.notified();
            tokio::pin!(due);
            due.as_mut().enable();
            let next = self.inner.queue().pop_front();
            if let Some(job) = next {
                if job.durable && !job.recurring {
                    self.forget_delivered(&job);
                }
                return job;
            }
            due.await;
        }
    }

    /// Removes a delivered one-shot job from the file (read-modify-write).
    fn forget_delivered(&self, job: &CronJob) {
        let removed = self.lock().and_then(|_lock| {
            let mut jobs = self.read();
            let before = jobs.len();
            jobs.retain(|saved| saved.id != job.id);
            if jobs.len() == before {
                return Ok(());
            }
            self.write(&jobs)
        });
        if let Err(error) = removed {
            self.inner.notices.emit(
                TAG,
                format!("{error}; {} may fire again in a later session", job.id),
            );
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

    // ANCHOR: read_modify_write
    /// Takes the lock of `.scheduled_tasks.json`, for one read-modify-write.
    fn lock(&self) -> Result<store::StoreLock, ScheduleError> {
        store::StoreLock::acquire(&self.inner.store).map_err(|source| self.failed(source))
    }

    /// The jobs in the file now (under the lock). Entries that cannot be
    /// loaded are dropped by the next write, so they are reported and the
    /// file as it was is copied to the backup first.
    fn read(&self) -> Vec<CronJob> {
        let (jobs, problems) = store::load(&self.inner.store);
        // The problems found at start-up were reported then, and are still
        // in the file until this first change: no need to say them twice.
        let mut reported = self.inner.reported();
        if !problems.is_empty() && problems != *reported {
            for problem in &problems {
                self.inner.notices.emit(TAG, format!("skipped: {problem}"));
            }
            keep_backup(&self.inner.store, &self.inner.notices);
        }
        *reported = problems;
        jobs
    }

    /// Writes `jobs` as the file (under the lock), atomically.
    fn write(&self, jobs: &[CronJob]) -> Result<(), ScheduleError> {
        store::save(&self.inner.store, jobs).map_err(|source| self.failed(source))
    }
    // ANCHOR_END: read_modify_write

    fn failed(&self, source: std::io::Error) -> ScheduleError {
        ScheduleError::Save {
            path: self.inner.store.clone(),
            source,
        }
    }
}

/// Copies the jobs file at `store_path` to [`BACKUP_FILE_NAME`] beside it:
/// what could not be loaded may be a person's edit worth fixing.
fn keep_backup(store_path: &Path, notices: &Notices) {
    let backup = store_path.with_file_name(BACKUP_FILE_NAME);
    match std::fs::copy(store_path, &backup) {
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

impl Inner {
    fn schedule(&self) -> MutexGuard<'_, Schedule> {
        self.schedule.locked()
    }

    fn queue(&self) -> MutexGuard<'_, VecDeque<CronJob>> {
        self.queue.locked()
    }

    fn reported(&self) -> MutexGuard<'_, Vec<String>> {
        self.reported.locked()
    }

    fn ticker(&self) -> MutexGuard<'_, Option<JoinHandle<()>>> {
        self.ticker.locked()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(ticker) = self.ticker.inner_mut().take() {
            ticker.abort();
        }
    }
}
