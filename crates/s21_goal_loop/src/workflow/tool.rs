//! The `Workflow` tool: start a registered workflow, or resume a run.
//!
//! One entry of the dispatch map. Its handler checks the call and hands
//! it to [`WorkflowRuntime::start`], which answers with the run id before
//! any agent has run; the result comes later as a `<task_notification>`.
//! Its description lists the registered workflows, which are fixed when
//! the agent is built, so the text is the same on every request and the
//! request prefix stays cacheable.

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::registry::WorkflowRegistry;
use super::runtime::{StartRequest, WorkflowRuntime};
use crate::dispatch::{ToolContext, ToolRegistry};

/// The tool's name, as the model calls it.
pub const TOOL_NAME: &str = "Workflow";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    name: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    resume_from_run_id: Option<String>,
}

// ANCHOR: spec
/// What the model is told about `Workflow`, with the workflows of
/// `registry`.
pub fn spec(registry: &WorkflowRegistry) -> ToolSpec {
    let mut description = String::from(
        "Start a registered workflow in the background: a program that runs many subagents \
         (each with the base tools, under this session's permissions) through fixed phases, \
         in parallel where it can. The call returns at once with a run id; the terminal shows \
         the run's progress, and its result arrives later in a <task_notification> naming \
         the output file. To continue a run that was stopped or failed, call again with its \
         `resume_from_run_id`: every agent call it already finished is reused from its \
         journal, and only the rest run. Registered workflows:",
    );
    for meta in registry.metas() {
        description.push_str(&format!("\n- {}: {}", meta.name, meta.description));
        if !meta.phases.is_empty() {
            description.push_str(&format!(" (phases: {})", meta.phases.join(", ")));
        }
    }
    ToolSpec::new(
        TOOL_NAME,
        description,
        json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The workflow to run, one of those listed."
                },
                "args": {
                    "type": "object",
                    "description": "The workflow's arguments (optional; on resume, the run's own by default)."
                },
                "resume_from_run_id": {
                    "type": "string",
                    "description": "The run id of an earlier run of this workflow, to resume it."
                }
            },
            "required": ["name"]
        }),
    )
}
// ANCHOR_END: spec

// ANCHOR: register
/// Adds `Workflow` to the dispatch map: each call starts a run of
/// `runtime`.
pub fn register(tools: &mut ToolRegistry, runtime: &WorkflowRuntime) {
    let runtime = runtime.clone();
    tools.register(spec(runtime.registry()), move |input, _cx: ToolContext| {
        let runtime = runtime.clone();
        async move { call(&runtime, &input) }
    });
}

/// One `Workflow` call.
fn call(runtime: &WorkflowRuntime, input: &Value) -> ToolOutput {
    let input: Input = match parse_input(TOOL_NAME, input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    let request = StartRequest {
        name: input.name,
        args: input.args,
        resume_from_run_id: input.resume_from_run_id,
    };
    let name = request.name.clone();
    match runtime.start(request) {
        Ok(started) => {
            let reused = match started.journaled {
                0 => String::new(),
                n => format!(" Resuming: {n} agent calls are journaled and will be reused."),
            };
            ToolOutput::ok(format!(
                "Workflow {name} started in the background as run {}.{reused} Its result \
                 will arrive in a <task_notification>; meanwhile you can go on with other work \
                 or end your turn.",
                started.run_id
            ))
        }
        Err(error) => ToolOutput::error(format!("Workflow not started: {error}")),
    }
}
// ANCHOR_END: register
