//! The five task tools, as the model sees them and as the dispatch map
//! runs them.
//!
//! Every handler validates its input, then runs the board operation on a
//! blocking thread: the board's lock may have to wait for another process,
//! and that wait must not stall the async runtime.
//!
//! From lesson 15 on several agents share the board, so the tools are
//! registered for a [`Caller`]: a claim records the caller as the owner
//! unless it names another, and only a task's owner may complete it — the
//! lead may complete a teammate's task only with `force`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::board::{Refusal, TaskBoard};
use super::task::Task;
use crate::dispatch::{ToolContext, ToolRegistry};
use crate::team::{LEAD, Roster};

// ANCHOR: caller
/// Who calls the task tools: the name a claim records when it names no
/// owner, and who `complete_task` checks against the task's owner.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The lead, whose teammates are in the roster. It completes its own
    /// tasks and those of owners outside the team (a claim it made for
    /// someone who is not a teammate); a teammate's only with `force`.
    Lead(Roster),
    /// A teammate, by name: it completes only the tasks it owns.
    Teammate(String),
}

impl Caller {
    /// The caller's name, the owner its claims record by default.
    pub fn name(&self) -> &str {
        match self {
            Self::Lead(_) => LEAD,
            Self::Teammate(name) => name,
        }
    }

    /// Whether the caller may complete `task`, a claimed one, with the
    /// lead's `force` flag as given.
    pub fn may_complete(&self, task: &Task, force: bool) -> Result<(), Refusal> {
        let owner = task.owner.as_deref();
        let allowed = match self {
            Self::Teammate(name) => owner == Some(name.as_str()),
            Self::Lead(roster) => {
                force || owner.is_none_or(|owner| owner == LEAD || roster.get(owner).is_none())
            }
        };
        if allowed {
            return Ok(());
        }
        Err(Refusal::NotOwner {
            id: task.id.clone(),
            owner: task.owner.clone(),
            caller: self.name().to_string(),
            force: matches!(self, Self::Lead(_)),
        })
    }
}
// ANCHOR_END: caller

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
                    "owner": {"type": "string", "description": "Who works on it (default: you)."}
                },
                "required": ["task_id"]
            }),
        ),
        ToolSpec::new(
            "complete_task",
            "Mark a task you claimed completed. Reports the tasks this unblocks. Only the \
             task's owner may complete it; the lead may complete a teammate's with force.",
            json!({
                "type": "object",
                "properties": {
                    "task_id": task_id,
                    "force": {"type": "boolean", "description": "Lead only: complete a teammate's task (default false)."}
                },
                "required": ["task_id"]
            }),
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
    #[serde(default)]
    force: bool,
}

// ANCHOR: register
/// Adds the five tools to the dispatch map, all working on `board` for
/// `caller`.
pub fn register(tools: &mut ToolRegistry, board: &TaskBoard, caller: &Caller) {
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
        let (board, caller) = (board.clone(), caller.clone());
        tools.register(spec, move |input: Value, _: ToolContext| {
            let (board, caller) = (board.clone(), caller.clone());
            async move {
                tokio::task::spawn_blocking(move || operation(&board, &caller, &input))
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
type Operation = fn(&TaskBoard, &Caller, &Value) -> ToolOutput;

fn refused(refusal: Refusal) -> ToolOutput {
    ToolOutput::error(refusal.to_string())
}

fn create(board: &TaskBoard, _caller: &Caller, input: &Value) -> ToolOutput {
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

fn list(board: &TaskBoard, _caller: &Caller, _input: &Value) -> ToolOutput {
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

fn get(board: &TaskBoard, _caller: &Caller, input: &Value) -> ToolOutput {
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

fn claim(board: &TaskBoard, caller: &Caller, input: &Value) -> ToolOutput {
    let input: IdInput = match parse_input("claim_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    let owner = input
        .owner
        .as_deref()
        .map(str::trim)
        .filter(|owner| !owner.is_empty())
        .unwrap_or(caller.name());
    match board.claim(input.task_id.trim(), owner) {
        Ok(task) => ToolOutput::ok(format!(
            "Claimed task {}: {} (owner: {owner})",
            task.id, task.subject
        )),
        Err(refusal) => refused(refusal),
    }
}

fn complete(board: &TaskBoard, caller: &Caller, input: &Value) -> ToolOutput {
    let input: IdInput = match parse_input("complete_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    match board.complete_checked(input.task_id.trim(), |task| {
        caller.may_complete(task, input.force)
    }) {
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
