//! The `task` tool: a subagent with a fresh history.
//!
//! A subagent is the same shared loop as its parent, given another set of
//! hooks and an empty `Vec<Message>`. It works on one self-contained job —
//! reading thirty files to find something, say — and all of that reading
//! stays in its own history, which is dropped when it finishes. The parent
//! receives one `tool_result`: the subagent's final text. Files the subagent
//! wrote or edited stay written; only the conversation is thrown away.
//!
//! Three things are kept from the parent, on purpose:
//!
//! * the model and model id, so the subagent thinks as well as its parent;
//! * the tool context — the workspace, so its work lands where the parent
//!   can see it, and the parent's notices, so the user sees it work;
//! * the hook registry, so its tool calls pass the same `PreToolUse` and
//!   `PostToolUse` hooks — above all the permission hook. A fresh context
//!   must not mean a fresh set of permissions.
//!
//! And three things differ: its own system prompt, the five base tools
//! without `task` (a subagent cannot spawn subagents), and a limit of
//! [`SUBAGENT_MAX_ROUNDS`] model calls.
//!
//! From lesson 8 on, a subagent's history is compacted like its parent's.
//! Thirty rounds of reading can hold far more than a context window, so
//! before each of its model calls the same pipeline runs — the cheap layers,
//! then a summary if it is still over the threshold — and a request refused
//! as too long is compacted and sent once more. It runs on a
//! [`Compactor`] of the subagent's own: the parent's thresholds, but its
//! own circuit breaker, so failed summaries of one history do not turn
//! summaries off for the other. Its `[compact]` notices reach the user as
//! `sub` notices, like the rest of its work.
//!
//! `task` is an ordinary entry of the dispatch map: its handler captures
//! the [`Subagent`] and the shared registry when it is registered, and gets
//! the rest from the call's [`ToolContext`].

use std::sync::Arc;

use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Event, Limits, Observer, TurnError, TurnOutcome};
use shared::cli::{Setup, describe_input};
use shared::error::ApiError;
use shared::hooks::{Hooks, ModelCall, ToolOutput};
use shared::model::Model;
use shared::notice::Notices;
use shared::protocol::{Message, Response, Role, SystemBlock, ToolSpec, ToolUse};
use shared::text::{plural, truncate_chars};

use crate::compact::{CompactConfig, Compactor, send_with_reactive_compaction};
use crate::dispatch::{ToolContext, ToolRegistry, base_tools};
use crate::hook_registry::HookRegistry;

// ANCHOR: constants
/// The tool's name, as the model calls it.
pub const TASK_TOOL: &str = "task";

/// Model calls a subagent may make before it is stopped.
pub const SUBAGENT_MAX_ROUNDS: usize = 30;

/// The tag of the subagent's notices: its tool calls, and its start and end.
pub const SUBAGENT_TAG: &str = "sub";

/// How much of a stopped subagent's last message the parent is shown.
const LAST_WORDS_CHARS: usize = 2_000;
// ANCHOR_END: constants

// ANCHOR: spec
/// What the parent model is told about `task`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        TASK_TOOL,
        "Hand a self-contained subtask to a subagent that starts with an empty context: \
         exploring or searching the code, or a contained change. It has bash, read_file, \
         write_file, edit_file and glob, but it cannot see this conversation, so the \
         description must say everything it needs to know. Only its final summary comes \
         back to you; files it changes stay changed.",
        json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "The whole job: what to do, where, and what to report back."
                }
            },
            "required": ["description"]
        }),
    )
}
// ANCHOR_END: spec

// ANCHOR: shared_hooks
/// The hook registry, shared by the parent's hooks and every subagent, so
/// that both run the very same `PreToolUse` and `PostToolUse` hooks.
/// Lesson 4's registry is already a handle whose clones share the hooks,
/// and it runs them with its lock released: a subagent's hooks never wait
/// for the parent's, nor the parent's for a subagent's.
pub type SharedHooks = HookRegistry;
// ANCHOR_END: shared_hooks

// ANCHOR: subagent
/// What a subagent shares with its parent: the model and model id, and
/// the compaction thresholds. The workspace and notices come with each
/// call's context.
pub struct Subagent {
    model: Arc<dyn Model>,
    model_id: String,
    compact: CompactConfig,
}

impl Subagent {
    /// Subagents that use the parent's model and compact their histories
    /// by the parent's thresholds, `compact`.
    pub fn new(model: Arc<dyn Model>, model_id: impl Into<String>, compact: CompactConfig) -> Self {
        Self {
            model,
            model_id: model_id.into(),
            compact,
        }
    }

    /// Runs one `task` call to the end and returns what the parent sees:
    /// the subagent's final text, or an `is_error` result saying why it
    /// stopped. Everything else it said is dropped with `history`; what it
    /// did to files stays done.
    pub async fn run(
        &self,
        input: &Value,
        context: &ToolContext,
        hooks: &SharedHooks,
    ) -> ToolOutput {
        let description = match description_of(input) {
            Ok(description) => description,
            Err(error) => return error,
        };
        // The subagent's own mechanisms report into a queue of their own,
        // which its loop relays to `Relay` below and so to the parent's.
        let own_notices = Notices::new();
        let own_context = ToolContext {
            notices: own_notices.clone(),
            ..context.clone()
        };
        let subagent_hooks = SubagentHooks {
            tools: base_tools(),
            registry: hooks.clone(),
            compactor: self.compactor(description, &own_context),
            context: own_context,
        };
        let mut agent = Agent::new(self.model.clone(), self.model_id.clone(), subagent_hooks)
            .with_notices(own_notices);
        agent.set_limits(Limits {
            max_rounds: Some(SUBAGENT_MAX_ROUNDS),
            ..Limits::default()
        });
        // A fresh history: the description is the first and only thing
        // the subagent knows.
        let mut history: Vec<Message> = Vec::new();
        let notices = &context.notices;
        let headline = description.lines().next().unwrap_or_default().trim();
        notices.emit(
            SUBAGENT_TAG,
            format!("spawned: {}", truncate_chars(headline, 80)),
        );
        // Cancelling the parent's turn drops this future, and the subagent
        // with it; its own token is never needed.
        // ANCHOR: exercise-s06-run
        let outcome = agent
            .run_turn(
                &mut history,
                description,
                &mut Relay(notices.clone()),
                &CancellationToken::new(),
            )
            .await;
        report(outcome, &history, notices)
        // ANCHOR_END: exercise-s06-run
    }

    // ANCHOR: compactor
    /// A compactor for one subagent: the parent's thresholds and model, a
    /// circuit breaker of its own, the subagent's workspace and notices, and
    /// its task as the request every summary repeats.
    fn compactor(&self, task: &str, context: &ToolContext) -> Compactor {
        let setup = Setup::new(
            context.workspace.clone(),
            self.model.clone(),
            self.model_id.clone(),
        )
        .with_notices(context.notices.clone());
        let mut compactor = Compactor::new(&setup, self.compact.clone());
        compactor.note_prompt(task);
        compactor
    }
    // ANCHOR_END: compactor
}

/// Adds `task` to the dispatch map: each call runs `subagent` behind the
/// shared `hooks`.
pub fn register(tools: &mut ToolRegistry, subagent: Subagent, hooks: SharedHooks) {
    let subagent = Arc::new(subagent);
    tools.register(spec(), move |input: Value, context: ToolContext| {
        let subagent = Arc::clone(&subagent);
        let hooks = hooks.clone();
        async move { subagent.run(&input, &context, &hooks).await }
    });
}
// ANCHOR_END: subagent

// ANCHOR: relay
/// Shows the subagent's work as the parent's notices: each tool call, each
/// failed result, each notice of its own. Its streamed text is not shown;
/// the parent sees its summary in the tool result.
struct Relay(Notices);

impl Observer for Relay {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::ToolCall(call) => self.0.emit(
                SUBAGENT_TAG,
                format!("> {}: {}", call.name, describe_input(call)),
            ),
            Event::ToolResult(_, result) if result.is_error => self.0.emit(
                SUBAGENT_TAG,
                format!("  error: {}", truncate_chars(result.text().trim(), 200)),
            ),
            Event::Notice(notice) => self.0.emit(SUBAGENT_TAG, notice.to_string()),
            // Work the subagent started reports its own state, unprefixed.
            Event::Progress(report) => self.0.progress(report.clone()),
            Event::Delta(_) | Event::ReplyDone | Event::ToolResult(..) => {}
        }
    }
}
// ANCHOR_END: relay

/// The `description` input, or an error the model can act on.
fn description_of(input: &Value) -> Result<&str, ToolOutput> {
    let problem = match input.get("description") {
        Some(Value::String(text)) if !text.trim().is_empty() => return Ok(text),
        Some(Value::String(_)) => "field `description` is empty",
        Some(_) => "field `description` must be a string",
        None => "missing field `description`",
    };
    Err(ToolOutput::error(format!(
        "Invalid input for {TASK_TOOL}: {problem}. Describe the whole subtask: the \
         subagent sees nothing of this conversation."
    )))
}

// ANCHOR: report
/// Turns the subagent's outcome into the parent's tool result, and tells
/// the user how it ended.
fn report(
    outcome: Result<TurnOutcome, TurnError>,
    history: &[Message],
    notices: &Notices,
) -> ToolOutput {
    let kept_out = history.len();
    match outcome {
        Ok(outcome) => {
            let rounds = plural(outcome.rounds, "round", "rounds");
            notices.emit(
                SUBAGENT_TAG,
                format!(
                    "done in {rounds}; its {} stay out of the parent's history",
                    plural(kept_out, "message", "messages")
                ),
            );
            let summary = if outcome.final_text.trim().is_empty() {
                "(the subagent ended without a summary)"
            } else {
                outcome.final_text.trim()
            };
            let cut = if outcome.truncated {
                " (its last reply was cut off at max_tokens)"
            } else {
                ""
            };
            ToolOutput::ok(format!("[subagent finished in {rounds}{cut}]\n{summary}"))
        }
        Err(error) => {
            let reason = match &error {
                TurnError::RoundLimit(rounds) => {
                    format!("subagent stopped after {rounds} rounds without finishing")
                }
                TurnError::Api(error) => format!("subagent failed: {error}"),
                TurnError::Cancelled => "subagent was cancelled".to_string(),
                TurnError::PromptBlocked(why) => format!("subagent's task was refused: {why}"),
            };
            notices.emit(SUBAGENT_TAG, format!("done: {reason}"));
            let last_words = match last_text(history) {
                Some(text) => format!(
                    "its last message was: \"{}\"",
                    truncate_chars(&text, LAST_WORDS_CHARS)
                ),
                None => "it wrote no text before stopping".to_string(),
            };
            ToolOutput::error(format!(
                "{reason}: {last_words}. Any files it changed stay changed; check them \
                 before retrying or doing the rest yourself."
            ))
        }
    }
}

/// The text of the subagent's last assistant message that has any.
fn last_text(history: &[Message]) -> Option<String> {
    history
        .iter()
        .rev()
        .filter(|message| message.role == Role::Assistant)
        .map(Message::text)
        .find(|text| !text.trim().is_empty())
}
// ANCHOR_END: report

// ANCHOR: hooks
/// The subagent's hooks: its own prompt, tools and compactor, the parent's
/// registry and tool context.
struct SubagentHooks {
    tools: ToolRegistry,
    registry: SharedHooks,
    context: ToolContext,
    compactor: Compactor,
}

impl Hooks for SubagentHooks {
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        vec![SystemBlock::text(format!(
            "You are a subagent working at {}. Complete the task you are given with your \
             tools, yourself: do not delegate it and do not ask questions, since nobody \
             can answer. Finish with a concise summary of what you found or changed; \
             that summary is the only thing the agent that sent you will see.",
            self.context.workspace.root().display()
        ))]
    }

    /// The base tools only: no `task`, so subagents cannot nest.
    fn tools(&mut self) -> Vec<ToolSpec> {
        self.tools.specs()
    }

    /// The parent's `PreToolUse` and `PostToolUse` hooks around every call,
    /// exactly as in the parent's `run_tool`. `UserPromptSubmit` and `Stop`
    /// belong to the user's conversation, so they are not triggered here.
    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        if let Some(reason) = self.registry.trigger_pre_tool_use(call) {
            return ToolOutput::error(reason);
        }
        let output = self.tools.dispatch(call, &self.context).await;
        self.registry.trigger_post_tool_use(call, output)
    }

    // ANCHOR: compaction
    /// Lesson 8's pipeline, over the subagent's own history.
    async fn before_model_call(&mut self, history: &mut Vec<Message>) {
        self.compactor.before_model_call(history).await;
    }

    /// Lesson 8's reactive compaction: a request refused as too long is
    /// compacted and sent once more.
    async fn call_model(&mut self, call: ModelCall<'_, '_>) -> Result<Response, ApiError> {
        send_with_reactive_compaction(&mut self.compactor, call).await
    }
    // ANCHOR_END: compaction
}
// ANCHOR_END: hooks
