//! Workflows: a Rust program, not the model, decides the orchestration.
//!
//! From lesson 1 on the model chose every step. Some jobs have a fixed
//! shape — review ten aspects of a change, verify each finding on its own,
//! sort what survives — and want it run fast (in parallel), the same way
//! every time, and without starting over when the process dies half-way.
//! This module runs such jobs. A workflow is an async Rust function
//! registered by name ([`registry`]); the model starts one with a single
//! `Workflow` tool call ([`tool`]), which returns at once with a run id
//! while the run goes on in the background ([`runtime`]).
//!
//! Inside, the workflow uses a handful of primitives on its context
//! ([`ctx`]): `agent` (a subagent on the shared loop, optionally bound to
//! a JSON Schema, see [`schema`] and [`agent`]), `parallel` (a barrier),
//! `pipeline` (each item through every stage, no barrier), `phase`, `log`
//! and one level of nested `workflow`. Every finished agent call is
//! written to the run's journal ([`journal`]) under a key made of its
//! content and, for identical calls, the order they were issued in, so a
//! run resumed by its id ([`store`]) re-runs only the calls that are not
//! there. Whoever runs a run holds its lock file ([`lock`]), so two
//! sessions cannot run it at once. The terminal shows the run's progress live, and its
//! end arrives as one `<task_notification>` ([`report`]), through lesson
//! 13's channel.
//!
//! A workflow can also be a script: JavaScript the model sends with the
//! call, or a `.workflows/<name>.js` saved in the workspace ([`saved`]),
//! run in a sandboxed engine whose functions are the same primitives
//! ([`script`], its limits in [`limits`]); `review-changes-js.js` beside
//! this file is the sample written as one.
//!
//! Start reading at [`ctx::WorkflowCtx::agent`], then
//! [`runtime::WorkflowRuntime::start`]; [`review_changes`] is the sample.

pub mod agent;
pub mod ctx;
pub mod journal;
pub mod limits;
pub mod lock;
pub mod meta;
pub mod registry;
pub mod report;
pub mod review_changes;
pub mod run;
pub mod runtime;
pub mod saved;
pub mod schema;
pub mod script;
pub mod store;
pub mod tool;

use std::future::Future;
use std::pin::Pin;

pub use ctx::{AgentCall, Stage, WorkflowCtx, stage};
pub use limits::{Limit, ScriptError, ScriptLimits};
pub use meta::{WorkflowInputError, WorkflowMeta};
pub use registry::WorkflowRegistry;
pub use runtime::{StartRequest, WorkflowOptions, WorkflowRuntime};

/// The tag of this lesson's notices.
pub const TAG: &str = "workflow";

/// A boxed future that owns its data, so workflows, stages and the tasks
/// of `parallel` fit in one type.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

// ANCHOR: error
/// Why a workflow run, or one step of it, failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowError {
    /// An agent's answer did not match its schema, even after the repair
    /// request.
    #[error("agent `{label}` returned invalid output after one repair: {error}")]
    InvalidOutput {
        label: String,
        error: schema::SchemaError,
    },
    /// An agent's loop ended in an error (an API error, its round limit).
    #[error("agent `{label}` failed: {reason}")]
    AgentFailed { label: String, reason: String },
    /// The run was cancelled (the session ended).
    #[error("the run was stopped")]
    Stopped,
    /// A nested workflow tried to start another one.
    #[error("workflow {name} was not started: workflows nest one level only")]
    TooDeep { name: String },
    /// A nested workflow that does not exist or is not valid.
    #[error(transparent)]
    Input(#[from] WorkflowInputError),
    /// The journal could not be written, so the result could not be kept.
    #[error("cannot write the journal: {0}")]
    Journal(String),
    /// The workflow's own code gave up.
    #[error("{0}")]
    Failed(String),
    /// A script did not parse, threw, or hit a limit of its sandbox.
    #[error(transparent)]
    Script(#[from] limits::ScriptError),
}
// ANCHOR_END: error
