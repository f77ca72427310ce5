//! `bash`, with `run_in_background`.
//!
//! The lesson replaces the dispatch map's `bash` with one that can hand a
//! command to [`BackgroundTasks`]. Its schema is the base tool's plus one
//! boolean; a command that stays in the foreground runs exactly as before.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::bash;
use shared::tools::input::parse_input;

use super::heuristic::runs_in_background;
use super::{BackgroundTasks, DEFAULT_TIMEOUT, MAX_TIMEOUT_SECS};
use crate::dispatch::{ToolContext, ToolRegistry};

#[derive(Deserialize)]
struct Input {
    command: String,
    /// Seconds.
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    run_in_background: Option<bool>,
}

// ANCHOR: spec
/// The base `bash` spec, with `run_in_background` added to its schema and
/// explained in its description.
pub fn spec() -> ToolSpec {
    let mut spec = bash::spec();
    spec.description.push_str(&format!(
        " Set `run_in_background` to true for slow commands (installs, builds, test \
         suites): the call returns at once with a task id such as bg_0001, and the \
         output arrives later in a <task_notification> message, so you can work on \
         something else meanwhile. Background commands may run for up to \
         {MAX_TIMEOUT_SECS} seconds (`timeout`; default {}). Without the field, \
         commands that look slow go to the background; set it to false to wait for \
         one.",
        DEFAULT_TIMEOUT.as_secs()
    ));
    if let Some(properties) = spec
        .input_schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        properties.insert(
            "timeout".into(),
            json!({
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_SECS,
                "description": format!(
                    "Seconds before the command is stopped (in the foreground at most {}).",
                    bash::MAX_TIMEOUT_SECS
                )
            }),
        );
        properties.insert(
            "run_in_background".into(),
            json!({
                "type": "boolean",
                "description": "Run without waiting; the output arrives later as a <task_notification>."
            }),
        );
    }
    spec
}
// ANCHOR_END: spec

// ANCHOR: register
/// Replaces the base `bash`, in its place, with one that runs commands in
/// the foreground or in `tasks`.
pub fn register(tools: &mut ToolRegistry, tasks: &BackgroundTasks) {
    let tasks = tasks.clone();
    tools.replace(spec(), move |input, cx: ToolContext| {
        let tasks = tasks.clone();
        async move { call(&tasks, &input, &cx).await }
    });
}
// ANCHOR_END: register

async fn call(tasks: &BackgroundTasks, input: &Value, cx: &ToolContext) -> ToolOutput {
    let input: Input = match parse_input("bash", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    if !runs_in_background(input.run_in_background, &input.command) {
        // The base tool, with its own limits, as in every earlier lesson.
        return bash::call(
            &cx.workspace,
            &json!({
                "command": input.command,
                "timeout": input.timeout,
            }),
        )
        .await;
    }
    let timeout = input.timeout.map_or(DEFAULT_TIMEOUT, |seconds| {
        Duration::from_secs(seconds.clamp(1, MAX_TIMEOUT_SECS))
    });
    let id = tasks.start(&cx.workspace, &input.command, timeout);
    cx.notices
        .emit(super::TAG, format!("{id} started: {}", input.command));
    ToolOutput::ok(format!(
        "[Background task {id} started] The command runs in the background (stopped after \
         {} s). Its output will arrive in a <task_notification> when it ends; do other work \
         meanwhile, or end your turn if there is nothing else to do.",
        timeout.as_secs()
    ))
}
