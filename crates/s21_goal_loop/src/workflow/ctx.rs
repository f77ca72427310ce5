//! The primitives a workflow is written in, as methods of its context.
//!
//! | primitive | what it does |
//! |-----------|--------------|
//! | [`WorkflowCtx::agent`] | one subagent call, journaled, optionally schema-bound |
//! | [`WorkflowCtx::parallel`] | runs tasks at once and waits for all: a barrier |
//! | [`WorkflowCtx::pipeline`] | each item through every stage on its own: no barrier |
//! | [`WorkflowCtx::phase`] | names the phase the progress line shows |
//! | [`WorkflowCtx::log`] | one line for the person watching |
//! | [`WorkflowCtx::workflow`] | runs another registered workflow, one level deep |
//!
//! A workflow gets no file or shell access of its own: what touches the
//! workspace is done by its agents, through their tools and permissions.
//! And it must be deterministic — the same arguments must lead to the
//! same calls, identical ones issued in the same order — or a resumed run
//! finds different keys than the journal holds and runs them again: no
//! clock, no randomness, no reading of the file system outside its agents.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::journal::{Record, call_key_with};
use super::limits::ScriptLimits;
use super::run::Run;
use super::{BoxFuture, TAG, WorkflowError};

/// The deepest a workflow may nest: the top one is level 0, a workflow it
/// starts is level 1, and that one may start no other.
pub const MAX_DEPTH: usize = 1;

// ANCHOR: agent_call
/// One agent call: a label (shown in progress and notices; usually
/// unique within the run, though the same call may be issued twice), the
/// task, and optionally the JSON Schema its answer must
/// match, the phase it belongs to, a key of the caller's that tells apart
/// calls otherwise alike, and the model to run it on.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCall {
    pub label: String,
    pub prompt: String,
    pub schema: Option<Value>,
    pub phase: Option<String>,
    /// Part of the journal key's content (a script's `key` option).
    pub key: Option<String>,
    /// A model id other than the session's, for this call only; part of
    /// the journal key's content too.
    pub model: Option<String>,
}

impl AgentCall {
    /// A call whose answer is free text.
    pub fn new(label: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            prompt: prompt.into(),
            schema: None,
            phase: None,
            key: None,
            model: None,
        }
    }

    /// The same call, its answer bound to `schema`.
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The same call, which moves the run into `phase` when it starts.
    pub fn phase(mut self, phase: impl Into<String>) -> Self {
        self.phase = Some(phase.into());
        self
    }

    /// What besides label, prompt and schema the journal key is made of:
    /// the caller's key and the model, when given.
    fn extra(&self) -> Vec<(&'static str, String)> {
        [("key", &self.key), ("model", &self.model)]
            .into_iter()
            .filter_map(|(name, value)| value.clone().map(|value| (name, value)))
            .collect()
    }
}
// ANCHOR_END: agent_call

/// One stage of a [`WorkflowCtx::pipeline`]: given the previous stage's
/// value (the item itself for the first stage), the item and its index,
/// the stage's value.
pub type Stage =
    Arc<dyn Fn(Value, Value, usize) -> BoxFuture<Result<Value, WorkflowError>> + Send + Sync>;

/// A [`Stage`] from an async closure.
pub fn stage<F, Fut>(function: F) -> Stage
where
    F: Fn(Value, Value, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, WorkflowError>> + Send + 'static,
{
    Arc::new(move |value, item, index| Box::pin(function(value, item, index)))
}

/// A workflow's handle on its run. Cheap to clone: stages and tasks take
/// their own copy.
#[derive(Clone)]
pub struct WorkflowCtx {
    run: Arc<Run>,
    depth: usize,
}

impl WorkflowCtx {
    /// The top-level context of `run`.
    pub(crate) fn new(run: Arc<Run>) -> Self {
        Self { run, depth: 0 }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run.id
    }

    /// The limits a script run in this session gets.
    pub fn script_limits(&self) -> ScriptLimits {
        self.run.registry.script_limits().clone()
    }

    // ANCHOR: agent
    /// Issues one agent call, and returns the future of its answer: from
    /// the journal, or from a run. The call's key — what it is, and which
    /// occurrence of that it is (see [`super::journal::call_key`]) — is fixed here, when
    /// the call is issued, not when the future first runs or finishes, so
    /// identical calls are numbered in the order the workflow's code
    /// issues them. If the journal has the key, its value comes back
    /// without a model call. Otherwise the call waits for a permit of the
    /// concurrency cap, runs, and — once it has an answer — is journaled
    /// before the future completes.
    pub fn agent(&self, call: AgentCall) -> BoxFuture<Result<Value, WorkflowError>> {
        let run = Arc::clone(&self.run);
        let extra = call.extra();
        let key_of = |occurrence| {
            call_key_with(
                "agent",
                &call.label,
                &call.prompt,
                call.schema.as_ref(),
                &extra,
                occurrence,
            )
        };
        let first_key = key_of(1);
        let occurrence = run.occurrences.next(&first_key);
        let key = key_of(occurrence);
        let ctx = self.clone();
        Box::pin(async move {
            if let Some(value) = run.journal.cached(&key) {
                run.update(|tally| {
                    tally.agents_cached += 1;
                    tally.done += 1;
                });
                return Ok(value);
            }
            if let Some(phase) = &call.phase {
                ctx.phase(phase.clone());
            }
            let permits = Arc::clone(run.agents.permits());
            let _permit = tokio::select! {
                permit = permits.acquire_owned() => permit.map_err(|_| WorkflowError::Stopped)?,
                () = run.cancel.cancelled() => return Err(WorkflowError::Stopped),
            };
            run.update(|tally| tally.running += 1);
            let (result, spent) = run
                .agents
                .run(
                    &run.workflow,
                    &call.label,
                    &call.prompt,
                    call.schema.as_ref(),
                    call.model.as_deref(),
                    &run.cancel,
                )
                .await;
            let kept = result.and_then(|value| {
                run.journal
                    .record(Record {
                        key,
                        label: call.label.clone(),
                        value: value.clone(),
                    })
                    .map_err(|error| WorkflowError::Journal(error.to_string()))?;
                Ok(value)
            });
            run.update(|tally| {
                tally.running -= 1;
                tally.agents_run += 1;
                tally.tokens += spent.tokens;
                tally.tool_calls += spent.tool_calls;
                if kept.is_ok() {
                    tally.done += 1;
                }
            });
            kept
        })
    }
    // ANCHOR_END: agent

    // ANCHOR: parallel
    /// Runs every task at once and waits for all of them: a barrier. The
    /// results come back in the tasks' order, whatever order they finish
    /// in. The first failure fails the whole (the other tasks are dropped).
    pub async fn parallel<T: Send + 'static>(
        &self,
        tasks: Vec<BoxFuture<Result<T, WorkflowError>>>,
    ) -> Result<Vec<T>, WorkflowError> {
        futures::future::try_join_all(tasks).await
    }

    /// Runs each item through every stage in turn, each item on its own:
    /// item A may be in the last stage while item B is still in the first.
    /// This is the default shape; use [`WorkflowCtx::parallel`] between
    /// stages only where the next one really needs every result. The
    /// results come back in the items' order.
    pub async fn pipeline(
        &self,
        items: Vec<Value>,
        stages: Vec<Stage>,
    ) -> Result<Vec<Value>, WorkflowError> {
        let stages = Arc::new(stages);
        let runs = items.into_iter().enumerate().map(|(index, item)| {
            let stages = Arc::clone(&stages);
            async move {
                let mut value = item.clone();
                for stage in stages.iter() {
                    value = stage(value, item.clone(), index).await?;
                }
                Ok::<Value, WorkflowError>(value)
            }
        });
        futures::future::try_join_all(runs).await
    }
    // ANCHOR_END: parallel

    /// Moves the run into `title`: the progress line shows it, and a
    /// notice says so once.
    pub fn phase(&self, title: impl Into<String>) {
        let title = title.into();
        let mut changed = false;
        self.run.update(|tally| {
            if tally.phase.as_deref() != Some(title.as_str()) {
                tally.phase = Some(title.clone());
                changed = true;
            }
        });
        if changed {
            self.run
                .notices
                .emit(TAG, format!("{}: phase {title}", self.run.workflow));
        }
    }

    /// One line for the person watching the run.
    pub fn log(&self, message: impl AsRef<str>) {
        self.run
            .notices
            .emit(TAG, format!("{}: {}", self.run.workflow, message.as_ref()));
    }

    // ANCHOR: nested
    /// Runs the registered workflow `name` with `args` inside this run and
    /// returns its result. Its agents are journaled with this run's, so a
    /// resume skips them too. One level only: a nested workflow that tries
    /// to start another gets [`WorkflowError::TooDeep`].
    pub async fn workflow(&self, name: &str, args: Value) -> Result<Value, WorkflowError> {
        if self.depth >= MAX_DEPTH {
            return Err(WorkflowError::TooDeep {
                name: name.to_string(),
            });
        }
        let registered = self.run.registry.find(name)?;
        self.log(format!("starting nested workflow {name}"));
        let nested = Self {
            run: Arc::clone(&self.run),
            depth: self.depth + 1,
        };
        (registered.run)(nested, args).await
    }
    // ANCHOR_END: nested
}
