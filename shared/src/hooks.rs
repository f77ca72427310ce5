//! The hook points: everything a lesson can attach to the loop.
//!
//! The loop in [`crate::agent`] never changes from lesson to lesson. Each
//! lesson adds its mechanism by implementing [`Hooks`], whose methods the loop
//! calls at fixed points of every round:
//!
//! ```text
//! on_user_prompt ─► ┌─ before_model_call ─► system_prompt + tools ─► call_model ─┐
//!                   │                                                           │
//!                   │   no tool_use? ─► on_stop ─► (continue prompt? loop : end) │
//!                   │                                                           │
//!                   └── after_tool_results ◄── run_tool (once per tool_use) ◄───┘
//! ```
//!
//! Between turns, the front end waits for the user's next line or for
//! [`Hooks::idle_work`], whichever comes first, and at the end of the
//! session it calls [`Hooks::on_exit`].
//!
//! Only [`Hooks::tools`] and [`Hooks::run_tool`] have no default: a loop
//! without tools is a chat, not an agent.

use std::future::Future;

use crate::error::ApiError;
use crate::model::{DeltaSink, Model};
use crate::protocol::{ContentBlock, Message, Request, Response, SystemBlock, ToolSpec, ToolUse};

// ANCHOR: tool_output
/// What a tool handed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// What the model reads as the `tool_result` content.
    pub text: String,
    /// Sent as the result's `is_error`: the tool failed and the model should react.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful output.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    /// A failure the model should see and can react to.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }
}
// ANCHOR_END: tool_output

/// What [`Hooks::on_user_prompt`] decided about a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptCheck {
    /// Send the prompt as typed.
    Accept,
    /// Send this text instead (for example the prompt plus added context).
    Replace(String),
    /// Do not send anything; tell the user why.
    Block(String),
}

/// One model call, as the loop prepared it. A hook that wraps the call
/// (chapter 11) may change the fields and call [`ModelCall::send`] as often
/// as it needs.
pub struct ModelCall<'a, 's> {
    /// The model this call goes to.
    pub model: &'a dyn Model,
    /// The model id the request names.
    pub model_id: String,
    /// The request's `max_tokens`.
    pub max_tokens: u32,
    /// The system prompt sent with the request.
    pub system: &'a [SystemBlock],
    /// The tools the model is offered.
    pub tools: &'a [ToolSpec],
    /// The history the request is built from. A wrapper may append to it
    /// (a continuation prompt, say) as long as it keeps it valid.
    pub history: &'a mut Vec<Message>,
    /// Receives each piece of the reply as it streams in.
    pub on_delta: &'a mut DeltaSink<'s>,
}

impl ModelCall<'_, '_> {
    /// Sends the request as it stands now.
    pub async fn send(&mut self) -> Result<Response, ApiError> {
        let request = Request {
            model: &self.model_id,
            max_tokens: self.max_tokens,
            system: self.system,
            messages: self.history,
            tools: self.tools,
        };
        self.model.send(&request, &mut *self.on_delta).await
    }
}

// ANCHOR: hooks
/// The points where a lesson attaches its mechanism to the loop.
pub trait Hooks: Send {
    /// The system prompt for the next request. Called before every model
    /// call, so a lesson can rebuild it from fresh state.
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        Vec::new()
    }

    /// The tools the model may call in the next request.
    fn tools(&mut self) -> Vec<ToolSpec>;

    /// Runs one tool call. Failures are outputs with `is_error`, never panics.
    fn run_tool(&mut self, call: &ToolUse) -> impl Future<Output = ToolOutput> + Send;

    /// Sees each prompt the user types before it enters the history.
    fn on_user_prompt(&mut self, _prompt: &str) -> PromptCheck {
        PromptCheck::Accept
    }

    /// Runs before every model call with the history open for changes
    /// (reminders, compaction, notifications). It must leave every
    /// `tool_use` paired with its `tool_result`.
    fn before_model_call(
        &mut self,
        _history: &mut Vec<Message>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Makes the model call. The default sends the request once.
    fn call_model(
        &mut self,
        mut call: ModelCall<'_, '_>,
    ) -> impl Future<Output = Result<Response, ApiError>> + Send {
        async move { call.send().await }
    }

    /// Sees the round's `tool_result` blocks before they are appended.
    /// Anything added must come *after* the results.
    fn after_tool_results(&mut self, _results: &mut Vec<ContentBlock>) {}

    /// Runs when the model ends its turn. Returning a prompt sends it as a
    /// new user message and continues the loop (at most
    /// [`crate::agent::Limits::max_stop_continuations`] times per turn).
    fn on_stop(&mut self, _history: &[Message]) -> impl Future<Output = Option<String>> + Send {
        async { None }
    }

    // ANCHOR: idle_hooks
    /// Waits, while the agent is idle, for work that does not come from the
    /// user — a background command that finished (lesson 13), a cron job
    /// that came due (lesson 14) — and returns the text to send as the next
    /// user message. The front end races it against the user's next line, so
    /// it must be cancel-safe: nothing is taken from a queue unless it is
    /// returned. The default never finishes.
    fn idle_work(&mut self) -> impl Future<Output = String> + Send {
        std::future::pending()
    }

    /// Whether work this session started is still running and will arrive
    /// through [`Hooks::idle_work`] — lesson 20's workflow runs, which a
    /// request starts in the background and whose result is the point of
    /// the request. After a `-p` prompt the front end keeps taking idle work
    /// while this says so, and only then exits; the REPL does not need it.
    /// The default, for lessons whose background work may be cut short at
    /// exit, is `false`.
    fn has_pending_work(&mut self) -> bool {
        false
    }

    /// Runs once when the session ends (end of input, `q`, or after a `-p`
    /// prompt), so work still running can be reported and stopped rather
    /// than left behind.
    fn on_exit(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }
    // ANCHOR_END: idle_hooks

    // ANCHOR: slash_command
    /// Answers a line the user typed that starts with `/` (lesson 19's
    /// `/status` and `/help`) in the harness, without a model call: `Some`
    /// is the text to show, and nothing enters the history. `None`, the
    /// default, sends the line to the model like any prompt, so lessons that
    /// know no commands behave as before.
    fn slash_command(&mut self, _line: &str) -> Option<String> {
        None
    }
    // ANCHOR_END: slash_command
}
// ANCHOR_END: hooks
