//! The task board's tools as a teammate has them (lesson 16).
//!
//! A teammate has lesson 12's five tools in its own name (lesson 15), with
//! two differences that follow from working autonomously: `claim_task`
//! claims as a lease (see [`crate::tasks::lease`]), and `complete_task` may
//! leave out `task_id` to complete the task the teammate holds — after an
//! auto-claim, the one it was given. It still completes only tasks it
//! owns.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::sync::LockExt;
use shared::tools::input::parse_input;

use super::autonomy::{Autonomy, CurrentTask, now_secs};
use crate::dispatch::{ToolContext, ToolRegistry};
use crate::tasks::TaskBoard;
use crate::tasks::tools::Caller;

#[derive(Deserialize)]
struct ClaimInput {
    task_id: String,
}

#[derive(Deserialize)]
struct CompleteInput {
    #[serde(default)]
    task_id: Option<String>,
}

/// Replaces two of the board's tools (registered in the teammate's name by
/// `teammate.rs`) for teammate `name`.
pub fn register(
    tools: &mut ToolRegistry,
    board: &TaskBoard,
    name: &str,
    autonomy: &Autonomy,
    held: &CurrentTask,
) {
    let (board_for_claim, me, lease, holding) = (
        board.clone(),
        name.to_string(),
        autonomy.lease,
        held.clone(),
    );
    tools.register(claim_spec(), move |input, _cx: ToolContext| {
        let (board, me, holding) = (board_for_claim.clone(), me.clone(), holding.clone());
        async move { blocking(move || claim(&board, &me, lease, &holding, &input)).await }
    });
    let (board, holding, me) = (
        board.clone(),
        held.clone(),
        Caller::Teammate(name.to_string()),
    );
    tools.register(complete_spec(), move |input, _cx: ToolContext| {
        let (board, holding, me) = (board.clone(), holding.clone(), me.clone());
        async move { blocking(move || complete(&board, &me, &holding, &input)).await }
    });
}

/// Runs board work on a blocking thread: it takes a file lock.
async fn blocking(work: impl FnOnce() -> ToolOutput + Send + 'static) -> ToolOutput {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| ToolOutput::error(format!("The task tool failed: {error}")))
}

fn claim_spec() -> ToolSpec {
    ToolSpec::new(
        "claim_task",
        "Claim a task for yourself: it becomes in_progress with you as its owner. Fails if \
         someone else holds it or it is blocked. Idle, you also claim ready tasks by \
         yourself.",
        json!({
            "type": "object",
            "properties": {"task_id": {"type": "string"}},
            "required": ["task_id"]
        }),
    )
}

fn complete_spec() -> ToolSpec {
    ToolSpec::new(
        "complete_task",
        "Mark a task you own completed. Without task_id, the task you hold (the one you \
         claimed or were given). Reports the tasks this unblocked.",
        json!({
            "type": "object",
            "properties": {"task_id": {"type": "string", "description": "Default: the task you hold."}}
        }),
    )
}

fn claim(
    board: &TaskBoard,
    me: &str,
    lease: Duration,
    holding: &CurrentTask,
    input: &Value,
) -> ToolOutput {
    let input: ClaimInput = match parse_input("claim_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    match board.claim_leased(input.task_id.trim(), me, now_secs(), lease) {
        Ok(leased) => {
            *holding.locked() = Some(leased.task.id.clone());
            ToolOutput::ok(format!(
                "Claimed task {}: {} (owner: {me})",
                leased.task.id, leased.task.subject
            ))
        }
        Err(refusal) => ToolOutput::error(refusal.to_string()),
    }
}

fn complete(board: &TaskBoard, me: &Caller, holding: &CurrentTask, input: &Value) -> ToolOutput {
    let input: CompleteInput = match parse_input("complete_task", input) {
        Ok(input) => input,
        Err(error) => return error,
    };
    let mut held = holding.locked();
    let Some(id) = input
        .task_id
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .or_else(|| held.clone())
    else {
        return ToolOutput::error(
            "You hold no task: name the task_id to complete, or claim one first.",
        );
    };
    match board.complete_checked(&id, |task| me.may_complete(task, false)) {
        Ok((task, unblocked)) => {
            if held.as_deref() == Some(id.as_str()) {
                *held = None;
            }
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
        Err(refusal) => ToolOutput::error(refusal.to_string()),
    }
}
