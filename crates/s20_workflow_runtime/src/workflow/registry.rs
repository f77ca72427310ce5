//! Workflows by name: the Rust functions the `Workflow` tool can start.
//!
//! A workflow is an async function of its context and its arguments (a
//! JSON value from the tool call) that returns a JSON value, the run's
//! output. The registry is fixed when the agent is built — it is a field
//! of [`crate::Options`], holding the sample [`super::review_changes`] by
//! default — so the tool's description, which lists it, never changes
//! during a session and the request prefix stays cacheable. A library
//! caller registers workflows of its own with [`WorkflowRegistry::register`].
//!
//! Registering does not check the metadata; every `Workflow` call does,
//! before anything runs, and answers a bad name, an empty description or
//! an empty phase with an error the model reads.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::limits::ScriptLimits;
use super::meta::{WorkflowInputError, WorkflowMeta};
use super::{BoxFuture, WorkflowCtx, WorkflowError};

/// A workflow's code.
pub type WorkflowFn =
    Arc<dyn Fn(WorkflowCtx, Value) -> BoxFuture<Result<Value, WorkflowError>> + Send + Sync>;

/// A workflow as registered: what it says of itself, and its code.
#[derive(Clone)]
pub struct Registered {
    pub meta: WorkflowMeta,
    pub run: WorkflowFn,
    /// The JavaScript source, when the workflow is a saved script (see
    /// [`super::saved`]); `None` for a Rust function.
    pub source: Option<Arc<str>>,
}

// ANCHOR: registry
/// The workflows a session can start, by name.
#[derive(Clone)]
pub struct WorkflowRegistry {
    workflows: BTreeMap<String, Registered>,
    /// How much a script may use, saved or sent by the model.
    limits: ScriptLimits,
}

impl WorkflowRegistry {
    /// No workflows at all.
    pub fn empty() -> Self {
        Self {
            workflows: BTreeMap::new(),
            limits: ScriptLimits::default(),
        }
    }

    /// The same registry, its scripts run under `limits`.
    pub fn with_script_limits(mut self, limits: ScriptLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits every script's run gets.
    pub fn script_limits(&self) -> &ScriptLimits {
        &self.limits
    }

    /// Registers `function` under `meta.name`, replacing a workflow of the
    /// same name.
    pub fn register<F, Fut>(&mut self, meta: WorkflowMeta, function: F)
    where
        F: Fn(WorkflowCtx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, WorkflowError>> + Send + 'static,
    {
        let run: WorkflowFn = Arc::new(move |ctx, args| Box::pin(function(ctx, args)));
        self.workflows.insert(
            meta.name.clone(),
            Registered {
                meta,
                run,
                source: None,
            },
        );
    }

    /// Registers a saved script: `run` runs `source`. A name a Rust
    /// workflow already has is kept by the Rust workflow; returns whether
    /// the script was registered.
    pub fn register_script(
        &mut self,
        meta: WorkflowMeta,
        source: Arc<str>,
        run: WorkflowFn,
    ) -> bool {
        if self.workflows.contains_key(&meta.name) {
            return false;
        }
        self.workflows.insert(
            meta.name.clone(),
            Registered {
                meta,
                run,
                source: Some(source),
            },
        );
        true
    }

    /// The workflow `name`, if its metadata passes the checks; else why
    /// not, with the known names when there is no such workflow.
    pub fn find(&self, name: &str) -> Result<&Registered, WorkflowInputError> {
        let registered = self
            .workflows
            .get(name)
            .ok_or_else(|| WorkflowInputError::Unknown {
                name: name.to_string(),
                known: self.names().join(", "),
            })?;
        registered.meta.validate()?;
        Ok(registered)
    }

    /// Whether a workflow is registered as `name`, valid or not.
    pub fn contains(&self, name: &str) -> bool {
        self.workflows.contains_key(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.workflows.keys().map(String::as_str).collect()
    }

    /// The metadata of every workflow, by name.
    pub fn metas(&self) -> impl Iterator<Item = &WorkflowMeta> {
        self.workflows.values().map(|registered| &registered.meta)
    }

    /// Every workflow, by name.
    pub fn all(&self) -> impl Iterator<Item = &Registered> {
        self.workflows.values()
    }

    /// The names of the saved scripts, sorted.
    pub fn script_names(&self) -> Vec<&str> {
        self.workflows
            .values()
            .filter(|registered| registered.source.is_some())
            .map(|registered| registered.meta.name.as_str())
            .collect()
    }
}
// ANCHOR_END: registry
