//! Background work: slow commands run while the agent goes on.
//!
//! A `bash` call the model marks `run_in_background` (or that looks slow,
//! see [`heuristic`]) is not awaited. It becomes a tokio task with an id
//! (`bg_0001`, `bg_0002`, …), its own timeout and the `bash` tool's capped
//! capture, and the call is answered at once with that id. When the
//! command ends, its [`Finished`] record joins a [`FinishedQueue`], and
//! the agent takes it from there in one of two places (see
//! [`crate::hooks`]):
//!
//! * during a turn, after the `tool_result` blocks of the next round
//!   ([`BackgroundTasks::take_finished`], from `after_tool_results`);
//! * between turns, as a user message of its own
//!   ([`BackgroundTasks::next_finished`], from `idle_work`), which the
//!   REPL races against the user's next line.
//!
//! Taking empties the queue under its lock, so each record is delivered
//! exactly once, however many finish in one round. At the end of the
//! session ([`BackgroundTasks::stop_all`]) commands still running are
//! reported and killed with everything they started; dropping the last
//! handle does the same, so no command outlives its agent.
//!
//! Start reading at [`BackgroundTasks::start`].

pub mod heuristic;
pub mod notification;
pub mod tool;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use shared::notice::Notices;
use shared::sync::LockExt;
use shared::tools::Workspace;
use shared::tools::bash::{self, BashOptions};
use tokio::task::JoinHandle;

use crate::finished::FinishedQueue;

pub use notification::Finished;

/// The tag of this lesson's notices.
pub const TAG: &str = "background";

/// How long a background command may run unless the model says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest timeout the model may ask for, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 3_600;

/// The background tasks of one agent. Clones share them.
#[derive(Clone)]
pub struct BackgroundTasks {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    /// Records of ended commands. A command moves from `running` into this
    /// queue while the state lock is held, so under that lock it is always
    /// in exactly one of the two places (or delivered).
    finished: FinishedQueue<Finished>,
    notices: Notices,
}

/// The work still running, and the ids handed out.
#[derive(Default)]
struct State {
    /// The number of the last id handed out.
    last_id: u32,
    running: BTreeMap<String, Running>,
}

/// A command still running.
struct Running {
    command: String,
    /// `None` for the moment between registering the task and spawning it.
    handle: Option<JoinHandle<()>>,
}

/// A command that was still running when the session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub id: String,
    pub command: String,
}

impl BackgroundTasks {
    /// No tasks yet; notices go to `notices`.
    pub fn new(notices: Notices) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                finished: FinishedQueue::new(),
                notices,
            }),
        }
    }

    // ANCHOR: start
    /// Starts `command` in `workspace` as a tokio task and returns its id
    /// at once. Must be called inside a tokio runtime.
    pub fn start(&self, workspace: &Workspace, command: &str, timeout: Duration) -> String {
        let id = {
            let mut state = self.inner.state();
            state.last_id += 1;
            let id = format!("bg_{:04}", state.last_id);
            // Registered before the task exists: a command that ends at once
            // must find itself here to move to the queue.
            state.running.insert(
                id.clone(),
                Running {
                    command: command.to_string(),
                    handle: None,
                },
            );
            id
        };
        // ANCHOR: exercise-s13-start
        let options = BashOptions {
            timeout,
            ..BashOptions::default()
        };
        // The task holds the tasks weakly: when the agent is gone, there is
        // nobody to tell, and the finished command is simply dropped.
        let tasks = Arc::downgrade(&self.inner);
        let (workspace, command, task_id) = (workspace.clone(), command.to_string(), id.clone());
        let handle = tokio::spawn(async move {
            let report = bash::execute(&workspace, &command, &options).await;
            finish(
                &tasks,
                Finished {
                    id: task_id,
                    command,
                    status: report.status,
                    output: report.text,
                },
            );
        });
        let mut state = self.inner.state();
        match state.running.get_mut(&id) {
            Some(running) => running.handle = Some(handle),
            // It already finished; the handle has nothing left to stop.
            None => drop(handle),
        }
        id
        // ANCHOR_END: exercise-s13-start
    }
    // ANCHOR_END: start

    /// Takes every finished record, oldest first. Each is handed out once.
    pub fn take_finished(&self) -> Vec<Finished> {
        self.inner.finished.take()
    }

    /// Waits until at least one record is finished, then takes them all.
    /// Cancel-safe: records are taken only in the poll that returns them.
    pub async fn next_finished(&self) -> Vec<Finished> {
        self.inner.finished.next().await
    }

    /// The ids and commands still running.
    pub fn running(&self) -> Vec<(String, String)> {
        self.inner
            .state()
            .running
            .iter()
            .map(|(id, running)| (id.clone(), running.command.clone()))
            .collect()
    }

    // ANCHOR: stop_all
    /// Stops every command still running — with everything it started — and
    /// reports each with a notice. Their output is discarded.
    pub async fn stop_all(&self) -> Vec<Stopped> {
        let running = std::mem::take(&mut self.inner.state().running);
        let mut stopped = Vec::with_capacity(running.len());
        for (id, running) in running {
            if let Some(handle) = running.handle {
                handle.abort();
                // Aborting drops the command's future, whose guard kills
                // the process group; awaiting the handle waits for that.
                let _ = handle.await;
            }
            self.inner.notices.emit(
                TAG,
                format!(
                    "{id} was still running at exit and was stopped: {}",
                    running.command
                ),
            );
            stopped.push(Stopped {
                id,
                command: running.command,
            });
        }
        stopped
    }
    // ANCHOR_END: stop_all
}

/// Moves a task from running to finished and wakes whoever waits.
fn finish(tasks: &Weak<Inner>, finished: Finished) {
    let Some(inner) = tasks.upgrade() else {
        return;
    };
    {
        let mut state = inner.state();
        // A task stopped at exit was taken out of `running` already; its
        // result is not wanted.
        if state.running.remove(&finished.id).is_none() {
            return;
        }
        inner.notices.emit(
            TAG,
            format!(
                "{} {}: {}",
                finished.id,
                notification::status_word(&finished.status),
                finished.command
            ),
        );
        // Pushed under the state lock: see `Inner::finished`.
        inner.finished.push(finished);
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }
}

impl Drop for Inner {
    /// The last handle is gone: stop whatever still runs, so no command
    /// outlives the agent that started it.
    fn drop(&mut self) {
        let state = self.state.inner_mut();
        for running in state.running.values() {
            if let Some(handle) = &running.handle {
                handle.abort();
            }
        }
    }
}
