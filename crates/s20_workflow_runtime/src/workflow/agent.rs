//! One workflow agent: a subagent on the shared loop, with a fresh
//! history, behind the session's hooks.
//!
//! A workflow agent is lesson 6's subagent ([`Subagent::child`]): the
//! same model stack as the main loop (so lesson 11's recovery retries its
//! calls), the base tools, the shared hook registry (so lesson 3's
//! permissions and lesson 19's rules apply to it as to the main agent),
//! its own compactor, and a system prompt that says which call of which
//! workflow it is. Nothing here loops: the loop is the one in `shared`.
//!
//! With a schema, the agent is asked for one JSON object; its final text
//! is checked ([`super::schema::check`]), and if it fails, the agent is
//! told the exact error once, in the same conversation, and checked
//! again. A second failure is [`WorkflowError::InvalidOutput`], naming the
//! call's label and the error.

use std::sync::Arc;

use serde_json::Value;
use shared::CancellationToken;
use shared::agent::{Event, Observer, TurnError};
use shared::notice::Notices;
use shared::protocol::{Message, Usage};
use tokio::sync::Semaphore;

use super::{TAG, WorkflowError, schema};
use crate::dispatch::ToolContext;
use crate::subagent::{SharedHooks, Subagent};

/// Agents running at once, across all runs of a session, unless the
/// caller chooses otherwise.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// What one agent call costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    pub tokens: u64,
    pub tool_calls: usize,
}

/// Starts workflow agents: the subagent factory, the shared hooks, the
/// context their tools run in, and the permits that cap how many run at
/// once.
pub struct AgentRunner {
    subagent: Subagent,
    hooks: SharedHooks,
    context: ToolContext,
    permits: Arc<Semaphore>,
}

impl AgentRunner {
    /// Agents made by `subagent`, behind `hooks`, working in `context`, at
    /// most `concurrency` at once (at least one).
    pub fn new(
        subagent: Subagent,
        hooks: SharedHooks,
        context: ToolContext,
        concurrency: usize,
    ) -> Self {
        Self {
            subagent,
            hooks,
            context,
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
        }
    }

    /// The permits of the concurrency cap.
    pub fn permits(&self) -> &Arc<Semaphore> {
        &self.permits
    }

    // ANCHOR: run
    /// Runs one agent call of `workflow` to its answer: the final text, or
    /// with `schema` the JSON object it was asked for; on `model` when one
    /// is named, else on the session's. The caller holds a permit while
    /// this runs.
    pub async fn run(
        &self,
        workflow: &str,
        label: &str,
        prompt: &str,
        schema: Option<&Value>,
        model: Option<&str>,
        cancel: &CancellationToken,
    ) -> (Result<Value, WorkflowError>, Spent) {
        let notices = Notices::new();
        let context = ToolContext {
            notices: notices.clone(),
            ..self.context.clone()
        };
        let system = system_prompt(workflow, label, &context);
        let mut agent = self
            .subagent
            .child(prompt, Some(system), context, &self.hooks);
        if let Some(model) = model {
            agent.set_model_id(model);
        }
        let mut watcher = Watcher {
            label: label.to_string(),
            notices: self.context.notices.clone(),
            usage: Usage::default(),
            tool_calls: 0,
        };
        let mut history: Vec<Message> = Vec::new();
        let first = match schema {
            Some(schema) => schema::structured_prompt(prompt, schema),
            None => prompt.to_string(),
        };
        let result = async {
            let text = turn(
                &mut agent,
                &mut history,
                &first,
                &mut watcher,
                cancel,
                label,
            )
            .await?;
            let Some(schema) = schema else {
                return Ok(Value::String(text.trim().to_string()));
            };
            let error = match schema::check(&text, schema) {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            // One repair, in the same conversation: the agent sees what it
            // sent and exactly what was wrong with it.
            watcher.notices.emit(
                TAG,
                format!("{label}: output rejected, asking once for a repair: {error}"),
            );
            let repair = schema::repair_prompt(&error);
            let text = turn(
                &mut agent,
                &mut history,
                &repair,
                &mut watcher,
                cancel,
                label,
            )
            .await?;
            schema::check(&text, schema).map_err(|error| WorkflowError::InvalidOutput {
                label: label.to_string(),
                error,
            })
        }
        .await;
        let spent = Spent {
            tokens: total(&watcher.usage),
            tool_calls: watcher.tool_calls,
        };
        (result, spent)
    }
    // ANCHOR_END: run
}

/// One turn of the agent; its final text, or the error that ended it.
async fn turn(
    agent: &mut shared::agent::Agent<crate::subagent::SubagentHooks>,
    history: &mut Vec<Message>,
    prompt: &str,
    watcher: &mut Watcher,
    cancel: &CancellationToken,
    label: &str,
) -> Result<String, WorkflowError> {
    match agent.run_turn(history, prompt, watcher, cancel).await {
        Ok(outcome) => {
            watcher.usage.add(&outcome.usage);
            Ok(outcome.final_text)
        }
        Err(TurnError::Cancelled) => Err(WorkflowError::Stopped),
        Err(error) => Err(WorkflowError::AgentFailed {
            label: label.to_string(),
            reason: error.to_string(),
        }),
    }
}

/// The agent's system prompt. Its label is in it, so the person reading a
/// transcript (and the demo's script) can tell the agents apart.
fn system_prompt(workflow: &str, label: &str, context: &ToolContext) -> String {
    format!(
        "You are the agent `{label}` of the workflow `{workflow}`, working at {}. Do the task \
         you are given with your tools, yourself: nobody can answer questions. Your final \
         reply goes to the workflow's code, not to a person, so make it exactly what the \
         task asks for.",
        context.workspace.root().display()
    )
}

/// Every token a usage report counts: input (cached or not) and output.
fn total(usage: &Usage) -> u64 {
    usage.input_tokens
        + usage.output_tokens
        + usage.cache_read_input_tokens.unwrap_or(0)
        + usage.cache_creation_input_tokens.unwrap_or(0)
}

/// Watches one agent's loop: counts its tool calls and passes its own
/// notices (compaction, recovery) on under the workflow's tag. Its tool
/// calls are not shown one by one: a run of a hundred agents would bury
/// the screen, and the progress line counts them instead.
struct Watcher {
    label: String,
    notices: Notices,
    usage: Usage,
    tool_calls: usize,
}

impl Observer for Watcher {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::ToolCall(_) => self.tool_calls += 1,
            Event::Notice(notice) => self.notices.emit(TAG, format!("{}: {notice}", self.label)),
            Event::Progress(report) => self.notices.progress(report.clone()),
            Event::Delta(_) | Event::ReplyDone | Event::ToolResult(..) => {}
        }
    }
}
