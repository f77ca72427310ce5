//! The lead's four worktree tools: `create_worktree`, `list_worktrees`,
//! `remove_worktree`, `keep_worktree`. Git runs on a blocking thread: it
//! is a subprocess, and the manager takes a file lock.

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::WorktreeManager;
use crate::dispatch::{ToolContext, ToolRegistry};

/// The tag of the worktree notices.
pub const TAG: &str = "worktree";

#[derive(Deserialize)]
struct CreateInput {
    name: String,
    #[serde(default)]
    task_id: Option<String>,
}

#[derive(Deserialize)]
struct RemoveInput {
    name: String,
    #[serde(default)]
    discard_changes: bool,
}

#[derive(Deserialize)]
struct NameInput {
    name: String,
}

// ANCHOR: specs
fn specs() -> [ToolSpec; 4] {
    [
        ToolSpec::new(
            "create_worktree",
            "Create a git worktree: a separate checkout of this repository in \
             .worktrees/<name>, on a new branch wt/<name>. Bind it to a task with task_id: \
             the teammate that claims the task then reads, writes and runs commands only \
             there. Names: 1-64 letters, digits, '.', '_' or '-'.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "task_id": {"type": "string", "description": "The task this worktree is for."}
                },
                "required": ["name"]
            }),
        ),
        ToolSpec::new(
            "list_worktrees",
            "List the worktrees: name, path, branch, bound task, and uncommitted changes or \
             commits not yet on the main checkout.",
            json!({"type": "object", "properties": {}}),
        ),
        ToolSpec::new(
            "remove_worktree",
            "Remove a worktree and its branch. Refused while it has uncommitted changes or \
             commits not merged into the main checkout, unless discard_changes is true.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "discard_changes": {"type": "boolean", "description": "Throw its work away (default false)."}
                },
                "required": ["name"]
            }),
        ),
        ToolSpec::new(
            "keep_worktree",
            "Keep a finished worktree for review: its branch stays for a person to merge.",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }),
        ),
    ]
}
// ANCHOR_END: specs

/// Registers the four tools, working on `manager`.
pub fn register(tools: &mut ToolRegistry, manager: &WorktreeManager) {
    let [create_spec, list_spec, remove_spec, keep_spec] = specs();
    add(tools, create_spec, manager, create);
    add(tools, list_spec, manager, list);
    add(tools, remove_spec, manager, remove);
    add(tools, keep_spec, manager, keep);
}

/// One tool's work, run on a blocking thread.
type Operation = fn(&WorktreeManager, &Value, &ToolContext) -> ToolOutput;

fn add(tools: &mut ToolRegistry, spec: ToolSpec, manager: &WorktreeManager, operation: Operation) {
    let manager = manager.clone();
    tools.register(spec, move |input: Value, cx: ToolContext| {
        let manager = manager.clone();
        async move {
            tokio::task::spawn_blocking(move || operation(&manager, &input, &cx))
                .await
                .unwrap_or_else(|error| {
                    ToolOutput::error(format!("The worktree tool failed: {error}"))
                })
        }
    });
}

fn create(manager: &WorktreeManager, input: &Value, cx: &ToolContext) -> ToolOutput {
    let input: CreateInput = match parse_input("create_worktree", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    let task = input
        .task_id
        .as_deref()
        .map(str::trim)
        .filter(|id| !id.is_empty());
    match manager.create(input.name.trim(), task) {
        Ok(worktree) => {
            cx.notices.emit(TAG, format!("created {worktree}"));
            ToolOutput::ok(format!("Created worktree {worktree}"))
        }
        Err(error) => ToolOutput::error(error.to_string()),
    }
}

fn list(manager: &WorktreeManager, _input: &Value, _cx: &ToolContext) -> ToolOutput {
    match manager.list() {
        Ok(worktrees) if worktrees.is_empty() => ToolOutput::ok("No worktrees yet."),
        Ok(worktrees) => ToolOutput::ok(
            worktrees
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Err(error) => ToolOutput::error(error.to_string()),
    }
}

fn remove(manager: &WorktreeManager, input: &Value, cx: &ToolContext) -> ToolOutput {
    let input: RemoveInput = match parse_input("remove_worktree", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    match manager.remove(input.name.trim(), input.discard_changes) {
        Ok(removed) => {
            // `removed the worktree … and its branch …`
            let text = removed.to_string();
            cx.notices.emit(TAG, text.clone());
            ToolOutput::ok(capitalised(&text))
        }
        Err(error) => ToolOutput::error(error.to_string()),
    }
}

fn keep(manager: &WorktreeManager, input: &Value, cx: &ToolContext) -> ToolOutput {
    let input: NameInput = match parse_input("keep_worktree", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    match manager.keep(input.name.trim()) {
        Ok(worktree) => {
            cx.notices.emit(TAG, format!("kept {worktree}"));
            ToolOutput::ok(format!("Kept for review: {worktree}"))
        }
        Err(error) => ToolOutput::error(error.to_string()),
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
