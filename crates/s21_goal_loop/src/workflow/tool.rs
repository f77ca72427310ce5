//! The `Workflow` tool: start a registered workflow, run a script the
//! model writes, or resume a run.
//!
//! One entry of the dispatch map. Its handler checks the call and hands
//! it to [`WorkflowRuntime::start`] (a workflow by name) or
//! [`WorkflowRuntime::start_script`] (a `script`), which answer with the
//! run id before any agent has run; the result comes later as a
//! `<task_notification>`. Its description lists the registered workflows
//! and saved scripts, which are fixed when the agent is built, so the text
//! is the same on every request and the request prefix stays cacheable.

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::registry::WorkflowRegistry;
use super::runtime::{ScriptRequest, StartRequest, WorkflowRuntime};
use crate::dispatch::{ToolContext, ToolRegistry};

/// The tool's name, as the model calls it.
pub const TOOL_NAME: &str = "Workflow";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    script: Option<String>,
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
         journal, and only the rest run.\n\
         To run an orchestration of your own, send `script` (with a new `name` and a one-line \
         `description`): JavaScript, the body of an async function of `args`, in a sandbox \
         with only these primitives besides JSON, Promise, Map, Set and RegExp: \
         `await agent(prompt, {schema, label, key, model, phase})` (the final text, or the \
         parsed object when a JSON Schema is given); `await parallel([...])` (promises or \
         functions returning them, results in input order); `await pipeline(items, stage1, \
         stage2, ...)` (each stage gets (value, item, index); no barrier between items); \
         `phase(name)`; `log(message)`; and `return` the output. No modules, files, process, \
         network, Date or Math.random; memory, time and agent calls are limited. Give calls \
         stable labels: a resume reuses every call whose label, prompt, schema and key are \
         unchanged. A script asks the user before it runs. Registered workflows:",
    );
    for registered in registry.all() {
        let meta = &registered.meta;
        let kind = if registered.source.is_some() {
            " (saved script)"
        } else {
            ""
        };
        description.push_str(&format!("\n- {}{kind}: {}", meta.name, meta.description));
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
                    "description": "The workflow to run, one of those listed; with `script`, a new name for the run (letters, digits, `.`, `_`, `-`)."
                },
                "description": {
                    "type": "string",
                    "description": "With `script`: what the script does, in one line."
                },
                "script": {
                    "type": "string",
                    "description": "JavaScript to run as the workflow: the body of an async function of `args`, using the primitives above."
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
    let started = match input.script {
        Some(source) => runtime.start_script(
            request,
            ScriptRequest {
                description: input.description.unwrap_or_default(),
                source,
            },
        ),
        None => runtime.start(request),
    };
    match started {
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
