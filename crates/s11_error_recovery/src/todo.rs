//! The todo list: a plan the model writes down, and a reminder when it stops
//! keeping it.
//!
//! `todo_write` runs nothing. It takes the model's whole task list, checks
//! it, stores it and shows it back, so the plan is written in the context
//! where the model will keep seeing it. The list lives in a [`TodoTracker`],
//! a handle shared by the tool handler (which replaces the list) and the
//! lesson's `before_model_call` hook (which counts rounds and, when the list
//! has gone stale, appends a reminder).

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use shared::history::push_user;
use shared::hooks::ToolOutput;
use shared::protocol::{ContentBlock, Message, Role, ToolSpec};
use shared::sync::LockExt;

use crate::dispatch::{ToolContext, ToolRegistry};

/// The tool's name, as the model calls it.
pub const TOOL_NAME: &str = "todo_write";

/// The longest list accepted. The whole list comes back in every result, so
/// a bound keeps the context small, and a plan of more than twenty steps is
/// better split into stages.
pub const MAX_TODOS: usize = 20;

/// Model calls without a `todo_write` before the reminder is sent.
pub const REMIND_AFTER_ROUNDS: usize = 3;

/// What the model is told when its list has gone stale.
pub const REMINDER: &str = "<reminder>Update your todos.</reminder>";

// ANCHOR: status
/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    /// The names the model writes, in the order a task goes through them.
    pub const NAMES: [&'static str; 3] = ["pending", "in_progress", "completed"];

    fn parse(name: &str) -> Option<Self> {
        match name {
            "pending" => Some(Self::Pending),
            "in_progress" => Some(Self::InProgress),
            "completed" => Some(Self::Completed),
            _ => None,
        }
    }

    /// The box drawn in front of the task.
    pub fn icon(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[▸]",
            Self::Completed => "[✓]",
        }
    }
}

/// One task of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    pub content: String,
    pub status: Status,
}
// ANCHOR_END: status

// ANCHOR: spec
/// What the model is told about `todo_write`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        TOOL_NAME,
        "Create and update your task list. Send the whole list every time: it replaces \
         the previous one. Plan multi-step work with it before you start, keep exactly \
         one task in_progress while you work on it, and mark each task completed as soon \
         as it is done.",
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete task list, in order.",
                    "maxItems": MAX_TODOS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "The task, in a few words."},
                            "status": {"type": "string", "enum": Status::NAMES}
                        },
                        "required": ["content", "status"]
                    }
                }
            },
            "required": ["todos"]
        }),
    )
}
// ANCHOR_END: spec

// ANCHOR: problem
/// One thing wrong with a `todo_write` input, worded for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    NotAnObject,
    MissingTodos,
    TodosNotAList(&'static str),
    UnreadableString(String),
    ItemNotAnObject {
        index: usize,
        got: &'static str,
    },
    MissingField {
        index: usize,
        field: &'static str,
    },
    WrongType {
        index: usize,
        field: &'static str,
        got: &'static str,
    },
    EmptyContent {
        index: usize,
    },
    UnknownStatus {
        index: usize,
        status: String,
    },
    TooMany(usize),
    SeveralInProgress(Vec<usize>),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let statuses = Status::NAMES.join(", ");
        match self {
            Self::NotAnObject => write!(f, "the input must be an object with a `todos` list"),
            Self::MissingTodos => write!(f, "missing field `todos` (a list of tasks)"),
            Self::TodosNotAList(got) => write!(
                f,
                "`todos` must be a list of {{content, status}} objects, got {got}"
            ),
            Self::UnreadableString(error) => write!(
                f,
                "`todos` is a string that does not hold a JSON list ({error}); send the list itself"
            ),
            Self::ItemNotAnObject { index, got } => write!(
                f,
                "todos[{index}] must be an object with `content` and `status`, got {got}"
            ),
            Self::MissingField { index, field } => {
                write!(f, "todos[{index}]: missing field `{field}`")
            }
            Self::WrongType { index, field, got } => {
                write!(f, "todos[{index}].{field} must be a string, got {got}")
            }
            Self::EmptyContent { index } => write!(f, "todos[{index}].content is empty"),
            Self::UnknownStatus { index, status } => write!(
                f,
                "todos[{index}].status: unknown status {status:?}; use one of {statuses}"
            ),
            Self::TooMany(count) => {
                write!(f, "{count} tasks is too many; keep the list to {MAX_TODOS}")
            }
            Self::SeveralInProgress(indices) => {
                let list: Vec<String> = indices.iter().map(|i| format!("todos[{i}]")).collect();
                write!(
                    f,
                    "only one task may be in_progress at a time, but {} are",
                    list.join(", ")
                )
            }
        }
    }
}
// ANCHOR_END: problem

// ANCHOR: parse
/// Checks a `todo_write` input and returns the list it holds, or every
/// problem found, so that the model can fix them all in one retry.
pub fn parse_todos(input: &Value) -> Result<Vec<Todo>, Vec<Problem>> {
    let Value::Object(fields) = input else {
        return Err(vec![Problem::NotAnObject]);
    };
    let items = match fields.get("todos") {
        None | Some(Value::Null) => return Err(vec![Problem::MissingTodos]),
        Some(Value::Array(items)) => items.clone(),
        // Models sometimes send the list encoded as a JSON string. The
        // meaning is clear, so decode it rather than cost a round.
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items,
            Ok(other) => {
                return Err(vec![Problem::TodosNotAList(kind_in_string(&other))]);
            }
            Err(error) => return Err(vec![Problem::UnreadableString(error.to_string())]),
        },
        Some(other) => return Err(vec![Problem::TodosNotAList(kind(other))]),
    };

    let mut problems = Vec::new();
    let mut todos = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match parse_item(index, item) {
            Ok(todo) => todos.push(todo),
            Err(mut found) => problems.append(&mut found),
        }
    }
    if items.len() > MAX_TODOS {
        problems.push(Problem::TooMany(items.len()));
    }
    let in_progress: Vec<usize> = todos_in_progress(&items);
    if in_progress.len() > 1 {
        problems.push(Problem::SeveralInProgress(in_progress));
    }
    if problems.is_empty() {
        Ok(todos)
    } else {
        Err(problems)
    }
}

fn parse_item(index: usize, item: &Value) -> Result<Todo, Vec<Problem>> {
    let Value::Object(fields) = item else {
        return Err(vec![Problem::ItemNotAnObject {
            index,
            got: kind(item),
        }]);
    };
    // Extra fields (`id`, `activeForm`, `priority`, which models know from
    // other agents' todo tools) are ignored rather than refused.
    let text_field = |field: &'static str| match fields.get(field) {
        None | Some(Value::Null) => Err(Problem::MissingField { index, field }),
        Some(Value::String(text)) => Ok(text.as_str()),
        Some(other) => Err(Problem::WrongType {
            index,
            field,
            got: kind(other),
        }),
    };
    let content = text_field("content").and_then(|text| {
        if text.trim().is_empty() {
            Err(Problem::EmptyContent { index })
        } else {
            Ok(text.to_string())
        }
    });
    let status = text_field("status").and_then(|name| {
        Status::parse(name).ok_or_else(|| Problem::UnknownStatus {
            index,
            status: name.to_string(),
        })
    });
    match (content, status) {
        (Ok(content), Ok(status)) => Ok(Todo { content, status }),
        (content, status) => Err([content.err(), status.err()]
            .into_iter()
            .flatten()
            .collect()),
    }
}

/// The indices of items marked `in_progress`, read straight from the input
/// so the count is right even when other items are broken.
fn todos_in_progress(items: &[Value]) -> Vec<usize> {
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.get("status").and_then(Value::as_str) == Some("in_progress"))
        .map(|(index, _)| index)
        .collect()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn kind_in_string(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "a string holding one object",
        _ => "a string that holds no list",
    }
}
// ANCHOR_END: parse

// ANCHOR: render
/// The list as the terminal and the model see it, one task per line.
pub fn render(todos: &[Todo]) -> String {
    // ANCHOR: exercise-s05-render
    let lines: Vec<String> = todos
        .iter()
        .map(|todo| {
            // One line per task, whatever whitespace the model put inside.
            let content: Vec<&str> = todo.content.split_whitespace().collect();
            format!("{} {}", todo.status.icon(), content.join(" "))
        })
        .collect();
    lines.join("\n")
    // ANCHOR_END: exercise-s05-render
}

/// "Updated 3 tasks (1 completed, 1 in progress, 1 pending):" and the list.
fn summary(todos: &[Todo]) -> String {
    let count = |status| todos.iter().filter(|todo| todo.status == status).count();
    let noun = if todos.len() == 1 { "task" } else { "tasks" };
    if todos.is_empty() {
        return "Updated 0 tasks: the list is empty.".to_string();
    }
    format!(
        "Updated {} {noun} ({} completed, {} in progress, {} pending):\n{}",
        todos.len(),
        count(Status::Completed),
        count(Status::InProgress),
        count(Status::Pending),
        render(todos)
    )
}
// ANCHOR_END: render

// ANCHOR: tracker
/// The list and how many model calls it has gone without an update.
#[derive(Debug, Default)]
struct Board {
    todos: Vec<Todo>,
    rounds_since_update: usize,
}

/// A shared handle on the lesson's todo list. Clones see the same list: the
/// tool handler holds one, the hooks hold another.
#[derive(Debug, Clone, Default)]
pub struct TodoTracker {
    board: Arc<Mutex<Board>>,
}

impl TodoTracker {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `todo_write` to the dispatch map, bound to this list.
    pub fn register(&self, tools: &mut ToolRegistry) {
        let tracker = self.clone();
        tools.register(spec(), move |input: Value, _: ToolContext| {
            std::future::ready(tracker.write(&input))
        });
    }

    /// Runs one `todo_write` call. A valid list replaces the old one and
    /// restarts the reminder count; an invalid one changes nothing and
    /// tells the model what to fix.
    pub fn write(&self, input: &Value) -> ToolOutput {
        match parse_todos(input) {
            Ok(todos) => {
                let mut board = self.board();
                board.rounds_since_update = 0;
                board.todos = todos;
                ToolOutput::ok(summary(&board.todos))
            }
            Err(problems) => {
                let lines: Vec<String> = problems.iter().map(|p| format!("- {p}")).collect();
                ToolOutput::error(format!(
                    "Invalid input for {TOOL_NAME}; the list was not changed:\n{}",
                    lines.join("\n")
                ))
            }
        }
    }

    /// The current list.
    pub fn todos(&self) -> Vec<Todo> {
        self.board().todos.clone()
    }

    fn board(&self) -> MutexGuard<'_, Board> {
        // No code panics while holding the lock, so a poisoned lock still
        // holds a consistent list.
        self.board.locked()
    }
}
// ANCHOR_END: tracker

// ANCHOR: reminder
impl TodoTracker {
    /// Called before every model call. Counts the call, and when the list
    /// still has open tasks but has not been updated for
    /// [`REMIND_AFTER_ROUNDS`] calls, appends [`REMINDER`] to the history.
    ///
    /// The reminder joins the trailing user message, after its
    /// `tool_result` blocks (that is what [`push_user`] does), so every
    /// `tool_use` stays answered first. A history that does not end with a
    /// user message is left alone. Returns whether it reminded, so the
    /// hooks can tell the user.
    pub fn remind_if_due(&self, history: &mut Vec<Message>) -> bool {
        let mut board = self.board();
        let has_open_tasks = board
            .todos
            .iter()
            .any(|todo| todo.status != Status::Completed);
        let ends_with_user = history.last().is_some_and(|last| last.role == Role::User);
        let due =
            board.rounds_since_update >= REMIND_AFTER_ROUNDS && has_open_tasks && ends_with_user;
        if due {
            push_user(history, vec![ContentBlock::text(REMINDER)]);
            board.rounds_since_update = 0;
        }
        // The call about to be made is one more round without an update,
        // until a todo_write in its reply sets the count back to zero.
        board.rounds_since_update = board.rounds_since_update.saturating_add(1);
        due
    }
}
// ANCHOR_END: reminder
