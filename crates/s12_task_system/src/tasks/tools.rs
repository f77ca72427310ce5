//! The five task tools, as the model sees them and as the dispatch map
//! runs them.
//!
//! Every handler validates its input, then runs the board operation on a
//! blocking thread: the board's lock may have to wait for another process,
//! and that wait must not stall the async runtime.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::board::{Refusal, TaskBoard};
use super::task::Task;
use crate::dispatch::{ToolContext, ToolRegistry};

/// The owner recorded when `claim_task` names none.
pub const DEFAULT_OWNER: &str = "agent";

// ANCHOR: specs
/// What the model is told about the five tools.
pub fn specs() -> Vec<ToolSpec> {
    let task_id =
        json!({"type": "string", "description": "The task's id, as list_tasks shows it."});
    vec![
        ToolSpec::new(
            "create_task",
            "Create a task on the persistent task board (.tasks/), optionally blocked by \
             other tasks that must be completed first. Returns the new task's id.",
            json!({
                "type": "object",
                "properties": {
                    "subject": {"type": "string", "description": "A short title."},
                    "description": {"type": "string", "description": "What done looks like."},
                    "blockedBy": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Ids of tasks that must be completed before this one can start."
                    }
                },
                "required": ["subject"]
            }),
        ),
        ToolSpec::new(
            "list_tasks",
            "List every task on the board: id, status, owner, and what it is still blocked by.",
            json!({"type": "object", "properties": {}}),
        ),
        ToolSpec::new(
            "get_task",
            "Show one task in full, as JSON.",
            json!({"type": "object", "properties": {"task_id": task_id}, "required": ["task_id"]}),
        ),
        ToolSpec::new(
            "claim_task",
            "Claim a pending task whose dependencies are all completed: it becomes \
             in_progress with you as its owner. Fails if someone else has it or it is blocked.",
            json!({
                "type": "object",
                "properties": {
                    "task_id": task_id,
                    "owner": {"type": "string", "description": "Who works on it (default: agent)."}
                },
                "required": ["task_id"]
            }),
        ),
        ToolSpec::new(
            "complete_task",
            "Mark a claimed task completed. Reports the tasks this unblocks.",
            json!({"type": "object", "properties": {"task_id": task_id}, "required": ["task_id"]}),
        ),
    ]
}
// ANCHOR_END: specs

#[derive(Deserialize)]
struct CreateInput {
    subject: String,
    #[serde(default)]
    description: String,
    #[serde(default, rename = "blockedBy")]
    blocked_by: Option<Value>,
}

#[derive(Deserialize)]
struct IdInput {
    task_id: String,
    #[serde(default)]
    owner: Option<String>,
}

// ANCHOR: register
/// Adds the five tools to the dispatch map, all working on `board`.
pub fn register(tools: &mut ToolRegistry, board: &TaskBoard) {
    let handlers: [(ToolSpec, Operation); 5] = {
        let mut specs = specs().into_iter();
        let mut next = || {
            specs
                .next()
                .unwrap_or_else(|| ToolSpec::new("", "", json!({})))
        };
        [
            (next(), create),
            (next(), list),
            (next(), get),
            (next(), claim),
            (next(), complete),
        ]
    };
    for (spec, operation) in handlers {
        let board = board.clone();
        tools.register(spec, move |input: Value, _: ToolContext| {
            let board = board.clone();
            async move {
                tokio::task::spawn_blocking(move || operation(&board, &input))
                    .await
                    .unwrap_or_else(|error| {
                        ToolOutput::error(format!("The task tool failed: {error}"))
                    })
            }
        });
    }
}
// ANCHOR_END: register

/// One tool's work, run on a blocking thread.
type Operation = fn(&TaskBoard, &Value) -> ToolOutput;

fn refused(refusal: Refusal) -> ToolOutput {
    ToolOutput::error(refusal.to_string())
}

fn create(board: &TaskBoard, input: &Value) -> ToolOutput {
    let input: CreateInput = match parse_input("create_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    if input.subject.trim().is_empty() {
        return ToolOutput::error("Invalid input for create_task: `subject` is empty.");
    }
    let blocked_by = match dependencies(input.blocked_by) {
        Ok(ids) => ids,
        Err(problem) => {
            return ToolOutput::error(format!("Invalid input for create_task: {problem}"));
        }
    };
    match board.create(&input.subject, &input.description, &blocked_by) {
        Ok(task) => ToolOutput::ok(format!("Created task {}: {}", task.id, task.subject)),
        Err(refusal) => refused(refusal),
    }
}

/// Why `blockedBy` is not a list of ids; the model reads the message.
#[derive(Debug, thiserror::Error)]
enum BadDependencies {
    #[error("`blockedBy` must be a list of task ids")]
    NotAList,
    #[error("`blockedBy` holds {0}, which is not a task id")]
    NotAnId(Value),
}

/// `blockedBy` as a list of ids. Models sometimes send the list as a JSON
/// string (`"[\"1\"]"`) or a single id; both are understood.
fn dependencies(value: Option<Value>) -> Result<Vec<String>, BadDependencies> {
    let value = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(items)) => Value::Array(items),
            _ => Value::Array(vec![Value::String(text)]),
        },
        Some(other) => other,
    };
    let Value::Array(items) = value else {
        return Err(BadDependencies::NotAList);
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::String(id) => Ok(id.trim().to_string()),
            Value::Number(number) => Ok(number.to_string()),
            other => Err(BadDependencies::NotAnId(other)),
        })
        .collect()
}

fn list(board: &TaskBoard, _input: &Value) -> ToolOutput {
    let tasks = board.list();
    if tasks.is_empty() {
        return ToolOutput::ok("The task board is empty.");
    }
    let by_id: BTreeMap<&str, &Task> = tasks.iter().map(|task| (task.id.as_str(), task)).collect();
    let lines: Vec<String> = tasks
        .iter()
        .map(|task| task.line(&TaskBoard::waiting_for(task, &by_id)))
        .collect();
    ToolOutput::ok(lines.join("\n"))
}

fn get(board: &TaskBoard, input: &Value) -> ToolOutput {
    let input: IdInput = match parse_input("get_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    match board.get(input.task_id.trim()) {
        Ok(task) => ToolOutput::ok(
            serde_json::to_string_pretty(&task).unwrap_or_else(|error| error.to_string()),
        ),
        Err(refusal) => refused(refusal),
    }
}

fn claim(board: &TaskBoard, input: &Value) -> ToolOutput {
    let input: IdInput = match parse_input("claim_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    let owner = input
        .owner
        .as_deref()
        .map(str::trim)
        .filter(|owner| !owner.is_empty())
        .unwrap_or(DEFAULT_OWNER);
    match board.claim(input.task_id.trim(), owner) {
        Ok(task) => ToolOutput::ok(format!(
            "Claimed task {}: {} (owner: {owner})",
            task.id, task.subject
        )),
        Err(refusal) => refused(refusal),
    }
}

fn complete(board: &TaskBoard, input: &Value) -> ToolOutput {
    let input: IdInput = match parse_input("complete_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    match board.complete(input.task_id.trim()) {
        Ok((task, unblocked)) => {
            let mut text = format!("Completed task {}: {}", task.id, task.subject);
            if !unblocked.is_empty() {
                let names: Vec<String> = unblocked
                    .iter()
                    .map(|task| format!("{} ({})", task.id, task.subject))
                    .collect();
                text.push_str(&format!("\nUnblocked: {}", names.join(", ")));
            }
            ToolOutput::ok(text)
        }
        Err(refusal) => refused(refusal),
    }
}
