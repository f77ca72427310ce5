//! The background runs: started by the `Workflow` tool, each a tokio task,
//! ended by one notification.
//!
//! [`WorkflowRuntime::start`] does everything that can be refused before
//! the call returns — the name, the metadata, the resume id, the run's
//! files — then spawns the run and answers with its id. The run's task
//! calls the workflow's function with a fresh [`WorkflowCtx`], writes the
//! snapshot and the output file when it ends, and moves itself from the
//! running runs to the queue of finished ones (lesson 13's
//! [`FinishedQueue`]) under the runtime's lock, so a run is always in
//! exactly one of the two places. The agent takes the queue in
//! lesson 13's two places (see [`crate::hooks`]), and
//! [`WorkflowRuntime::has_pending`] tells `-p` to wait while anything is
//! running or not yet told. While a run runs, the session holds its lock
//! file ([`super::lock`]), so another session on the same workspace
//! cannot resume it at the same time.
//!
//! At the end of the session ([`WorkflowRuntime::stop_all`]) runs still
//! going are cancelled; each writes its snapshot as `stopped`, and a
//! notice says how to resume it. What their agents finished is in the
//! journal already.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use serde_json::{Value, json};
use shared::CancellationToken;
use shared::notice::Notices;
use shared::sync::LockExt;
use tokio::task::JoinHandle;

use crate::finished::FinishedQueue;

use super::agent::{AgentRunner, DEFAULT_CONCURRENCY};
use super::journal::Journal;
use super::lock::{LockError, RunLock};
use super::meta::{MAX_NAME_CHARS, WorkflowInputError, WorkflowMeta, is_safe_name};
use super::registry::{Registered, WorkflowFn, WorkflowRegistry};
use super::report::RunFinished;
use super::run::Run;
use super::store::{MAX_RUN_ID_CHARS, RunStatus, RunStore, Snapshot, new_run_id};
use super::{TAG, WorkflowCtx, WorkflowError};
use super::{saved, script};

/// How many characters of a failed run's error the snapshot keeps.
const ERROR_CHARS: usize = 2_000;

/// What a caller may choose about workflows.
#[derive(Clone)]
pub struct WorkflowOptions {
    /// The workflows the `Workflow` tool can start.
    pub registry: WorkflowRegistry,
    /// Workflow agents running at once in the session; `main` reads an
    /// override from `WORKFLOW_CONCURRENCY`.
    pub concurrency: usize,
}

/// The variable that overrides [`WorkflowOptions::concurrency`].
pub const ENV_CONCURRENCY: &str = "WORKFLOW_CONCURRENCY";

impl WorkflowOptions {
    /// The same options with the concurrency `lookup` finds for
    /// [`ENV_CONCURRENCY`], if it is set (at least 1).
    pub fn with_overrides(
        mut self,
        lookup: &impl Fn(&str) -> Option<String>,
    ) -> Result<Self, shared::settings::InvalidSetting> {
        if let Some(concurrency) = shared::settings::number(lookup, ENV_CONCURRENCY, 1)? {
            self.concurrency = concurrency;
        }
        Ok(self)
    }
}

impl Default for WorkflowOptions {
    fn default() -> Self {
        Self {
            registry: WorkflowRegistry::default(),
            concurrency: DEFAULT_CONCURRENCY,
        }
    }
}

/// What the `Workflow` tool asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StartRequest {
    pub name: String,
    /// The workflow's arguments; on resume, the run's own by default.
    pub args: Option<Value>,
    pub resume_from_run_id: Option<String>,
}

/// A script the model sent to run under a name of its choosing (see
/// [`WorkflowRuntime::start_script`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptRequest {
    /// What the run does, in one line, as a registered workflow says it.
    pub description: String,
    /// The JavaScript: the body of an async function of `args`.
    pub source: String,
}

/// A run that was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub run_id: String,
    /// Agent calls already in the journal (a resume).
    pub journaled: usize,
}

/// The workflow runs of one session. Clones share them.
#[derive(Clone)]
pub struct WorkflowRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    /// Runs that ended. A run moves from `running` into this queue while
    /// the state lock is held, so under that lock it is always in exactly
    /// one of the two places (or told).
    finished: FinishedQueue<RunFinished>,
    notices: Notices,
    store: RunStore,
    registry: WorkflowRegistry,
    agents: Arc<AgentRunner>,
}

#[derive(Default)]
struct State {
    running: BTreeMap<String, Running>,
}

struct Running {
    workflow: String,
    cancel: CancellationToken,
    /// `None` for the moment between registering the run and spawning it.
    handle: Option<JoinHandle<()>>,
}

impl WorkflowRuntime {
    /// Runs of `registry`'s workflows, their files under `store`, their
    /// agents started by `agents`, reporting to `notices`.
    pub fn new(
        registry: WorkflowRegistry,
        store: RunStore,
        agents: AgentRunner,
        notices: Notices,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                finished: FinishedQueue::new(),
                notices,
                store,
                registry,
                agents: Arc::new(agents),
            }),
        }
    }

    /// The registered workflows.
    pub fn registry(&self) -> &WorkflowRegistry {
        &self.inner.registry
    }

    // ANCHOR: start
    /// Checks `request` and starts its run in the background; returns the
    /// run id at once. Must be called inside a tokio runtime. Refused, with
    /// nothing started, when the name is not a safe slug or not registered,
    /// the workflow's metadata is invalid, or the resume id is bad, unknown,
    /// of another workflow, or still running — in this session or, as its
    /// lock file says, in another.
    pub fn start(&self, request: StartRequest) -> Result<Started, WorkflowInputError> {
        if !is_safe_name(&request.name, MAX_NAME_CHARS) {
            return Err(WorkflowInputError::BadName(request.name));
        }
        let registered = match self.inner.registry.find(&request.name) {
            Ok(registered) => registered.clone(),
            // A script the model sent is not registered; its run kept it.
            Err(error) => match &request.resume_from_run_id {
                Some(run_id) => self.stored_script(&request.name, run_id).ok_or(error)?,
                None => return Err(error),
            },
        };
        self.start_registered(request, registered)
    }

    /// Starts `script`, which the model sent, as a run named
    /// `request.name`: refused, with nothing started, when the name or the
    /// description does not pass a registered workflow's checks, when the
    /// name is a registered workflow's, or when the script does not parse
    /// (the error has its line and column). The source is kept beside the
    /// run's journal, so a resume can run it again without being sent it;
    /// a resume that sends an edited script runs the edited one, and every
    /// agent call whose content did not change comes from the journal.
    pub fn start_script(
        &self,
        request: StartRequest,
        script: ScriptRequest,
    ) -> Result<Started, WorkflowInputError> {
        let meta = WorkflowMeta::new(&request.name, script.description, Vec::<String>::new());
        meta.validate()?;
        if self.inner.registry.contains(&request.name) {
            return Err(WorkflowInputError::Taken(request.name));
        }
        script::check_syntax(&script.source).map_err(WorkflowInputError::Script)?;
        let source: Arc<str> = Arc::from(script.source);
        let registered = Registered {
            meta,
            run: saved::runner(Arc::clone(&source)),
            source: Some(source),
        };
        self.start_registered(request, registered)
    }

    /// The script a run of a model's script kept, registered as `name`.
    fn stored_script(&self, name: &str, run_id: &str) -> Option<Registered> {
        if !is_safe_name(run_id, MAX_RUN_ID_CHARS) || run_id.starts_with('.') {
            return None;
        }
        let source = std::fs::read_to_string(self.inner.store.script_path(run_id)).ok()?;
        let source: Arc<str> = Arc::from(source);
        Some(Registered {
            meta: WorkflowMeta::new(
                name,
                format!("the script of run {run_id}"),
                Vec::<String>::new(),
            ),
            run: saved::runner(Arc::clone(&source)),
            source: Some(source),
        })
    }

    /// Starts `registered` as `request` asks, in the order that keeps a
    /// refusal from leaving anything behind: the run's id and arguments,
    /// its place among the running runs, its lock file, its journal and
    /// snapshot, and only then its task.
    fn start_registered(
        &self,
        request: StartRequest,
        registered: Registered,
    ) -> Result<Started, WorkflowInputError> {
        let inner = &self.inner;
        let (run_id, args) = self.run_id_and_args(&request)?;
        let cancel = self.reserve(&run_id, &request.name)?;
        // Every refusal from here on gives the place back.
        let release = |error| {
            inner.state().running.remove(&run_id);
            error
        };
        // The in-process check above cannot see another session on the
        // same workspace; the run's lock file can. Whoever runs the run
        // holds it, from here until the run has written its end.
        let lock =
            RunLock::try_take(&inner.store.lock_path(&run_id), &run_id).map_err(|error| {
                release(match error {
                    LockError::Held(run_id) => WorkflowInputError::RunningElsewhere(run_id),
                    LockError::Io { .. } => WorkflowInputError::Storage(error.to_string()),
                })
            })?;
        let run = self
            .open_run(&run_id, &request.name, &args, &registered, cancel)
            .map(Arc::new)
            .map_err(release)?;
        let journaled = run.journal.len();
        inner.notices.emit(
            TAG,
            match journaled {
                0 => format!("{} started as {run_id}", request.name),
                n => format!("{} resumed as {run_id}: {n} calls journaled", request.name),
            },
        );
        run.update(|_| {});
        self.spawn(run, registered.run, args, lock);
        Ok(Started { run_id, journaled })
    }

    /// A new run's id and arguments, or on a resume the run's own id and
    /// (unless `request` brings new ones) its arguments.
    fn run_id_and_args(
        &self,
        request: &StartRequest,
    ) -> Result<(String, Value), WorkflowInputError> {
        let args = request.args.clone();
        let Some(run_id) = &request.resume_from_run_id else {
            let run_id = new_run_id(&request.name);
            return Ok((run_id, args.unwrap_or_else(|| json!({}))));
        };
        let snapshot = self.inner.store.load_for_resume(run_id)?;
        if snapshot.workflow != request.name {
            return Err(WorkflowInputError::OtherWorkflow {
                run_id: run_id.clone(),
                found: snapshot.workflow,
                wanted: request.name.clone(),
            });
        }
        Ok((run_id.clone(), args.unwrap_or(snapshot.args)))
    }

    /// Enters `run_id` among the running runs, refused if it is there
    /// already; returns the token that will cancel it.
    fn reserve(
        &self,
        run_id: &str,
        workflow: &str,
    ) -> Result<CancellationToken, WorkflowInputError> {
        let mut state = self.inner.state();
        if state.running.contains_key(run_id) {
            return Err(WorkflowInputError::StillRunning(run_id.to_string()));
        }
        let cancel = CancellationToken::new();
        // Registered before the task exists, and under the same lock as
        // the check: two resumes of one run cannot both start.
        state.running.insert(
            run_id.to_string(),
            Running {
                workflow: workflow.to_string(),
                cancel: cancel.clone(),
                handle: None,
            },
        );
        Ok(cancel)
    }

    /// The run, its journal open and its `running` snapshot written; a
    /// model's script is kept beside it, for a resume to run again.
    fn open_run(
        &self,
        run_id: &str,
        workflow: &str,
        args: &Value,
        registered: &Registered,
        cancel: CancellationToken,
    ) -> Result<Run, WorkflowInputError> {
        let inner = &self.inner;
        let storage = |what: &str, error: &dyn std::fmt::Display| {
            WorkflowInputError::Storage(format!("cannot {what} of {run_id}: {error}"))
        };
        let journal = Journal::open(&inner.store.journal_path(run_id), &inner.notices)
            .map_err(|error| storage("open the journal", &error))?;
        let run = Run::new(
            run_id.to_string(),
            workflow.to_string(),
            journal,
            Arc::clone(&inner.agents),
            inner.registry.clone(),
            inner.notices.clone(),
        )
        .with_cancel(cancel);
        let snapshot = snapshot_of(&run, args, RunStatus::Running, None, None);
        inner
            .store
            .write_snapshot(&snapshot)
            .map_err(|error| storage("write the snapshot", &error))?;
        if let Some(source) = &registered.source
            && !inner.registry.contains(workflow)
        {
            inner
                .store
                .write_script(run_id, source)
                .map_err(|error| storage("keep the script", &error))?;
        }
        Ok(run)
    }

    /// Spawns the task that runs `workflow` and ends the run, and gives its
    /// handle to the run's place among the running runs.
    fn spawn(&self, run: Arc<Run>, workflow: WorkflowFn, args: Value, lock: RunLock) {
        let weak = Arc::downgrade(&self.inner);
        let run_id = run.id.clone();
        let handle = tokio::spawn(async move {
            let ctx = WorkflowCtx::new(Arc::clone(&run));
            let outcome = tokio::select! {
                outcome = workflow(ctx, args.clone()) => outcome,
                () = run.cancel.cancelled() => Err(WorkflowError::Stopped),
            };
            finish(&weak, &run, &args, outcome, lock);
        });
        let mut state = self.inner.state();
        match state.running.get_mut(&run_id) {
            Some(running) => running.handle = Some(handle),
            // It already finished; the handle has nothing left to stop.
            None => drop(handle),
        }
    }
    // ANCHOR_END: start

    /// Takes every finished run, oldest first. Each is handed out once.
    pub fn take_finished(&self) -> Vec<RunFinished> {
        self.inner.finished.take()
    }

    /// Waits until at least one run has finished, then takes them all.
    /// Cancel-safe: runs are taken only in the poll that returns them.
    pub async fn next_finished(&self) -> Vec<RunFinished> {
        self.inner.finished.next().await
    }

    /// Whether a run is going, or ended and is not yet told to the model.
    pub fn has_pending(&self) -> bool {
        // Under the state lock, a run that ends meanwhile is in one of the
        // two places, never between them.
        let state = self.inner.state();
        !state.running.is_empty() || !self.inner.finished.is_empty()
    }

    /// The ids and workflows of the runs going now.
    pub fn running(&self) -> Vec<(String, String)> {
        self.inner
            .state()
            .running
            .iter()
            .map(|(id, running)| (id.clone(), running.workflow.clone()))
            .collect()
    }

    // ANCHOR: stop_all
    /// Cancels every run still going and waits for each to write its
    /// snapshot as `stopped`; a notice says how to resume it. Returns the
    /// stopped run ids.
    pub async fn stop_all(&self) -> Vec<String> {
        let running = std::mem::take(&mut self.inner.state().running);
        let mut stopped = Vec::with_capacity(running.len());
        for (run_id, running) in running {
            running.cancel.cancel();
            if let Some(handle) = running.handle {
                let _ = handle.await;
            }
            self.inner.notices.emit(
                TAG,
                format!(
                    "{run_id} ({}) was still running at exit and was stopped; its finished \
                     agents are journaled. Resume it with Workflow {{\"name\": \"{}\", \
                     \"resume_from_run_id\": \"{run_id}\"}}",
                    running.workflow, running.workflow
                ),
            );
            stopped.push(run_id);
        }
        stopped
    }
    // ANCHOR_END: stop_all
}

// ANCHOR: finish
/// Ends a run: the snapshot and, if it completed, the output file; then
/// the run lets go of its lock, moves from running to finished, and
/// whoever waits is woken — so whoever hears of the end can resume the
/// run at once, from this session or another.
fn finish(
    inner: &Weak<Inner>,
    run: &Run,
    args: &Value,
    outcome: Result<Value, WorkflowError>,
    lock: RunLock,
) {
    let Some(inner) = inner.upgrade() else {
        return;
    };
    let (status, summary, error) = match &outcome {
        Ok(output) => (
            RunStatus::Completed,
            serde_json::to_string_pretty(output).unwrap_or_default(),
            None,
        ),
        Err(WorkflowError::Stopped) => (
            RunStatus::Stopped,
            format!(
                "stopped; resume with Workflow {{\"name\": \"{}\", \"resume_from_run_id\": \"{}\"}}",
                run.workflow, run.id
            ),
            Some("stopped".to_string()),
        ),
        Err(error) => (
            RunStatus::Failed,
            error.to_string(),
            Some(shared::text::truncate_chars(
                &error.to_string(),
                ERROR_CHARS,
            )),
        ),
    };
    let mut output_file = None;
    let mut summary = summary;
    if let Ok(output) = &outcome {
        match inner.store.write_output(&run.id, output) {
            Ok(()) => output_file = Some(RunStore::output_name(&run.id)),
            Err(error) => summary = format!("the output could not be written: {error}\n{summary}"),
        }
    }
    let snapshot = snapshot_of(run, args, status, output_file.clone(), error);
    if let Err(error) = inner.store.write_snapshot(&snapshot) {
        inner.notices.emit(
            TAG,
            format!("cannot write the snapshot of {}: {error}", run.id),
        );
    }
    drop(lock);
    run.report_finished();
    let tally = run.snapshot();
    let finished = RunFinished {
        run_id: run.id.clone(),
        workflow: run.workflow.clone(),
        status,
        output_file,
        agents_run: tally.agents_run,
        agents_cached: tally.agents_cached,
        tokens: tally.tokens,
        tool_calls: tally.tool_calls,
        elapsed: run.elapsed(),
        summary,
    };
    {
        let mut state = inner.state();
        // A run stopped at exit was taken out of `running` already; nobody
        // will read its notification.
        if state.running.remove(&run.id).is_none() {
            return;
        }
        let written = finished
            .output_file
            .as_ref()
            .map(|file| format!("; output in {file}"))
            .unwrap_or_default();
        inner.notices.emit(
            TAG,
            format!(
                "{} {}: {} agents run, {} cached, {} tokens{written}",
                run.id,
                status.word(),
                tally.agents_run,
                tally.agents_cached,
                tally.tokens
            ),
        );
        inner.finished.push(finished);
    }
}
// ANCHOR_END: finish

/// The snapshot of `run` as it stands.
fn snapshot_of(
    run: &Run,
    args: &Value,
    status: RunStatus,
    output_file: Option<String>,
    error: Option<String>,
) -> Snapshot {
    let tally = run.snapshot();
    Snapshot {
        run_id: run.id.clone(),
        workflow: run.workflow.clone(),
        args: args.clone(),
        status,
        phase: tally.phase,
        agents_run: tally.agents_run,
        agents_cached: tally.agents_cached,
        tokens: tally.tokens,
        tool_calls: tally.tool_calls,
        elapsed_ms: u64::try_from(run.elapsed().as_millis()).unwrap_or(u64::MAX),
        output_file,
        error,
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }
}

impl Drop for Inner {
    /// The last handle is gone: stop whatever still runs, so no run
    /// outlives the agent that started it.
    fn drop(&mut self) {
        let state = self.state.inner_mut();
        for running in state.running.values() {
            running.cancel.cancel();
            if let Some(handle) = &running.handle {
                handle.abort();
            }
        }
    }
}
