//! The agent loop: the one piece of code every lesson shares.
//!
//! Call the model. If the reply asks for no tool, the turn is over.
//! Otherwise run each requested tool, answer every `tool_use` with one
//! `tool_result`, and call the model again. Chapter 1 is about this loop;
//! chapters 2 to 21 only implement [`Hooks`].
//!
//! Faults never leave the history invalid: a failed or cancelled model call
//! appends nothing, and a round's assistant message is stored together with
//! all of its results.
//!
//! While a turn runs, the loop also carries [`Notice`]s from the hooks to
//! the observer (see [`crate::notice`]), the moment they are emitted.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::error::ApiError;
use crate::history::push_user;
use crate::hooks::{Hooks, ModelCall, PromptCheck, ToolOutput};
use crate::model::Model;
use crate::notice::{Notice, Notices};
use crate::progress::Progress;
use crate::protocol::{ContentBlock, Delta, Message, Role, StopReason, ToolResult, ToolUse, Usage};
use crate::sync::LockExt;

// ANCHOR: limits
/// Bounds on one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `max_tokens` for each request.
    pub max_tokens: u32,
    /// Rounds (model calls) allowed in one turn; `None` for no limit.
    pub max_rounds: Option<usize>,
    /// How often [`Hooks::on_stop`] may send the model back to work.
    pub max_stop_continuations: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tokens: 8000,
            max_rounds: None,
            max_stop_continuations: 3,
        }
    }
}
// ANCHOR_END: limits

// ANCHOR: events
/// What the loop reports while it runs, for a terminal or a test to show.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A piece of the model's reply, as it streams in.
    Delta(Delta<'a>),
    /// The model finished one reply.
    ReplyDone,
    /// A tool is about to run.
    ToolCall(&'a ToolUse),
    /// A tool finished (or was refused).
    ToolResult(&'a ToolUse, &'a ToolResult),
    /// A mechanism reported something (see [`crate::notice`]).
    Notice(&'a Notice),
    /// Background work reported its state (see [`crate::progress`]).
    Progress(&'a Progress),
}

/// Receives [`Event`]s.
pub trait Observer: Send {
    /// Called for each event, in the order things happen.
    fn event(&mut self, event: Event<'_>);
}
// ANCHOR_END: events

/// An observer that ignores everything (for subagents and tests).
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {
    fn event(&mut self, _event: Event<'_>) {}
}

// ANCHOR: outcome
/// How a turn ended when it did not end normally.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TurnError {
    /// The model call failed and the hooks did not recover it.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The cancellation token fired before the turn finished.
    #[error("turn cancelled")]
    Cancelled,
    /// The turn ran `Limits::max_rounds` rounds (the number) without finishing.
    #[error("stopped after {0} rounds without finishing")]
    RoundLimit(usize),
    /// A hook blocked the prompt ([`crate::hooks::PromptCheck::Block`]); its reason.
    #[error("prompt blocked: {0}")]
    PromptBlocked(String),
}

/// How a turn ended normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    /// The text of the model's last reply.
    pub final_text: String,
    /// Model calls made during the turn.
    pub rounds: usize,
    /// Whether the last reply was cut off by `max_tokens`.
    pub truncated: bool,
    /// Why the model stopped its last reply, as the provider said.
    pub stop_reason: Option<StopReason>,
    /// The tokens the provider reported for the turn's model calls, added
    /// up (side queries the hooks make on their own are not included).
    pub usage: Usage,
}
// ANCHOR_END: outcome

// ANCHOR: agent
/// A model, its id, a lesson's hooks and the limits: everything that runs a
/// turn, plus the queue the hooks emit their notices into. The model is
/// fixed when the agent is made; the id may change ([`Agent::set_model_id`]).
pub struct Agent<H> {
    /// The model every round of the turn asks.
    model: Arc<dyn Model>,
    /// The model id sent with each request.
    model_id: String,
    /// The lesson's mechanisms, called at the hook points.
    hooks: H,
    /// `max_tokens` and the round limits of a turn.
    limits: Limits,
    /// The queue the hooks emit into; the loop hands its notices to the observer.
    notices: Notices,
}
// ANCHOR_END: agent

impl<H: Hooks> Agent<H> {
    /// An agent with default limits and a notice queue of its own.
    pub fn new(model: Arc<dyn Model>, model_id: impl Into<String>, hooks: H) -> Self {
        Self {
            model,
            model_id: model_id.into(),
            hooks,
            limits: Limits::default(),
            notices: Notices::new(),
        }
    }

    /// The same agent, relaying the notices emitted into `notices` (the
    /// handle its hooks were given).
    pub fn with_notices(mut self, notices: Notices) -> Self {
        self.notices = notices;
        self
    }

    /// The lesson's mechanisms: what a test or a program reads (a lesson's
    /// registries, its task board) or adds to (a tool, a hook) goes through
    /// the lesson's own accessors on these.
    pub fn hooks(&self) -> &H {
        &self.hooks
    }

    /// The lesson's mechanisms, to call a hook point between turns (a
    /// front end's `idle_work`, `slash_command`).
    pub fn hooks_mut(&mut self) -> &mut H {
        &mut self.hooks
    }

    /// `max_tokens` and the round limits of a turn.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Runs the next turns under `limits` (a subagent's smaller round
    /// budget).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The queue the hooks emit into and the loop relays.
    pub fn notices(&self) -> &Notices {
        &self.notices
    }

    /// The model id sent with each request.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Sends `model_id` with the requests from now on (lesson 20's workflow
    /// agents may each name a model of their own).
    pub fn set_model_id(&mut self, model_id: impl Into<String>) {
        self.model_id = model_id.into();
    }

    // ANCHOR: run_turn
    /// Runs one user prompt to the end of the model's turn.
    pub async fn run_turn(
        &mut self,
        history: &mut Vec<Message>,
        prompt: &str,
        observer: &mut dyn Observer,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, TurnError> {
        let relay = Relay::new(observer, self.notices.clone());
        let check = self.hooks.on_user_prompt(prompt);
        relay.flush();
        let prompt = match check {
            PromptCheck::Accept => prompt.to_string(),
            PromptCheck::Replace(text) => text,
            PromptCheck::Block(reason) => return Err(TurnError::PromptBlocked(reason)),
        };
        push_user(history, vec![ContentBlock::text(prompt)]);
        self.rounds(history, &relay, cancel)
            .instrument(tracing::info_span!("turn"))
            .await
    }
    // ANCHOR_END: run_turn

    /// Ends the session: runs [`Hooks::on_exit`], passing on what it
    /// reports.
    pub async fn finish(&mut self, observer: &mut dyn Observer) {
        let relay = Relay::new(observer, self.notices.clone());
        relay.around(self.hooks.on_exit()).await;
    }

    /// Waits for [`Hooks::idle_work`] while no turn runs, passing on the
    /// notices and progress reports emitted meanwhile, and returns the work
    /// to send as the next prompt.
    pub async fn idle_work(&mut self, observer: &mut dyn Observer) -> String {
        let relay = Relay::new(observer, self.notices.clone());
        relay.around(self.hooks.idle_work()).await
    }

    // ANCHOR: loop
    /// The loop itself. `history` must end with a user message.
    pub async fn run_loop(
        &mut self,
        history: &mut Vec<Message>,
        observer: &mut dyn Observer,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, TurnError> {
        let relay = Relay::new(observer, self.notices.clone());
        self.rounds(history, &relay, cancel)
            .instrument(tracing::info_span!("turn"))
            .await
    }

    async fn rounds(
        &mut self,
        history: &mut Vec<Message>,
        relay: &Relay<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, TurnError> {
        let mut rounds = 0;
        let mut continuations = 0;
        let mut usage = Usage::default();
        loop {
            if self.limits.max_rounds.is_some_and(|max| rounds >= max) {
                return Err(TurnError::RoundLimit(rounds));
            }
            rounds += 1;

            // `RUST_LOG=debug` shows each turn, model call and tool call as
            // a span, so a session's trace reads like its transcript.
            let span = tracing::debug_span!("model_call", round = rounds);
            let reply = tokio::select! {
                reply = self.call_model(history, relay).instrument(span.clone()) => reply?,
                () = cancel.cancelled() => return Err(TurnError::Cancelled),
            };
            span.in_scope(|| {
                tracing::debug!(stop_reason = ?reply.stop_reason, output_tokens = reply.usage.output_tokens, "reply")
            });
            relay.event(Event::ReplyDone);
            usage.add(&reply.usage);
            let stop_reason = reply.stop_reason;
            let truncated = stop_reason == Some(StopReason::MaxTokens);
            let message = clean_reply(reply.content);
            let calls: Vec<ToolUse> = message.tool_uses().cloned().collect();

            if calls.is_empty() {
                // ANCHOR: exercise-s01-finish
                let final_text = message.text();
                if !message.content.is_empty() {
                    history.push(message);
                }
                match relay.around(self.hooks.on_stop(history)).await {
                    Some(next) if continuations < self.limits.max_stop_continuations => {
                        continuations += 1;
                        push_user(history, vec![ContentBlock::text(next)]);
                        continue;
                    }
                    _ => {
                        return Ok(TurnOutcome {
                            final_text,
                            rounds,
                            truncated,
                            stop_reason,
                            usage,
                        });
                    }
                }
                // ANCHOR_END: exercise-s01-finish
            }

            // ANCHOR: exercise-s01-tools
            let mut results = self.run_tools(&calls, truncated, relay, cancel).await;
            let cancelled = cancel.is_cancelled();
            self.hooks.after_tool_results(&mut results);
            relay.flush();
            history.push(message);
            push_user(history, results);
            if cancelled {
                return Err(TurnError::Cancelled);
            }
            // ANCHOR_END: exercise-s01-tools
        }
    }
    // ANCHOR_END: loop

    // ANCHOR: call_model
    /// Asks the hooks for the system prompt and tools, then lets them make
    /// the call. Text is passed to the observer as it streams.
    async fn call_model(
        &mut self,
        history: &mut Vec<Message>,
        relay: &Relay<'_>,
    ) -> Result<crate::protocol::Response, ApiError> {
        relay.around(self.hooks.before_model_call(history)).await;
        let system = self.hooks.system_prompt();
        let tools = self.hooks.tools();
        // What assembling the prompt and tools reported comes before the
        // reply it is for.
        relay.flush();
        let mut on_delta = |delta: Delta<'_>| relay.event(Event::Delta(delta));
        let call = ModelCall {
            model: self.model.as_ref(),
            model_id: self.model_id.clone(),
            max_tokens: self.limits.max_tokens,
            system: &system,
            tools: &tools,
            history,
            on_delta: &mut on_delta,
        };
        relay.around(self.hooks.call_model(call)).await
    }
    // ANCHOR_END: call_model

    // ANCHOR: run_tools
    /// Runs the calls in order and returns one result per call, even when
    /// the user cancels half-way: unrun calls are answered as not run.
    async fn run_tools(
        &mut self,
        calls: &[ToolUse],
        truncated: bool,
        relay: &Relay<'_>,
        cancel: &CancellationToken,
    ) -> Vec<ContentBlock> {
        let mut results = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            relay.event(Event::ToolCall(call));
            let span = tracing::debug_span!("tool_call", tool = %call.name, id = %call.id);
            let output = if truncated && index + 1 == calls.len() {
                // The reply was cut off while the model was still writing
                // this call, so its input is incomplete: do not run it.
                ToolOutput::error(
                    "This tool call was cut off by max_tokens before its input was complete, \
                     so it was not run. Retry with a shorter input.",
                )
            } else if cancel.is_cancelled() {
                ToolOutput::error("Not run: the user cancelled the turn.")
            } else {
                tokio::select! {
                    output = relay.around(self.hooks.run_tool(call)).instrument(span.clone()) => output,
                    () = cancel.cancelled() => ToolOutput::error("Interrupted: the user cancelled the turn while this tool was running."),
                }
            };
            span.in_scope(|| {
                tracing::debug!(
                    is_error = output.is_error,
                    bytes = output.text.len(),
                    "result"
                )
            });
            let result = ToolResult {
                is_error: output.is_error,
                ..ToolResult::ok(call.id.clone(), output.text)
            };
            relay.event(Event::ToolResult(call, &result));
            results.push(ContentBlock::ToolResult(result));
        }
        results
    }
    // ANCHOR_END: run_tools
}

// ANCHOR: clean_reply
/// The model's reply as an assistant message, minus empty text blocks,
/// which the API refuses when they are sent back.
fn clean_reply(content: Vec<ContentBlock>) -> Message {
    let content = content
        .into_iter()
        .filter(|block| !matches!(block, ContentBlock::Text { text, .. } if text.trim().is_empty()))
        .collect();
    Message {
        role: Role::Assistant,
        content,
    }
}
// ANCHOR_END: clean_reply

// ANCHOR: relay
/// The observer during one turn, shared by the loop's own events and the
/// notices the hooks emit. A hook's notice reaches the observer while the
/// hook is still running (a retry's wait, a long summary), not after it.
struct Relay<'o> {
    // A std mutex: it is locked only between awaits, never across one.
    observer: Mutex<&'o mut dyn Observer>,
    notices: Notices,
}

impl<'o> Relay<'o> {
    fn new(observer: &'o mut dyn Observer, notices: Notices) -> Self {
        Self {
            observer: Mutex::new(observer),
            notices,
        }
    }

    fn event(&self, event: Event<'_>) {
        self.observer.locked().event(event);
    }

    /// Passes every queued notice and progress report on.
    fn flush(&self) {
        for notice in self.notices.take() {
            self.event(Event::Notice(&notice));
        }
        for report in self.notices.take_progress() {
            self.event(Event::Progress(&report));
        }
    }

    /// Awaits `work`, passing notices on as they are emitted meanwhile.
    async fn around<F: Future>(&self, work: F) -> F::Output {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                output = &mut work => {
                    self.flush();
                    return output;
                }
                () = self.notices.ready() => self.flush(),
            }
        }
    }
}
// ANCHOR_END: relay
