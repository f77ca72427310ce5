//! The hook registry: callbacks per event, triggered by the loop's hook points.
//!
//! Four events cover one cycle of the agent:
//!
//! * `UserPromptSubmit`, before a typed prompt reaches the model: a result
//!   replaces the prompt or blocks it.
//! * `PreToolUse`, before a tool runs: a result blocks the call and is
//!   handed to the model as the call's `is_error` result.
//! * `PostToolUse`, after a tool ran: these hooks only observe.
//! * `Stop`, when the model ends its turn: a result is sent as a new
//!   prompt and the loop goes on (at most
//!   [`shared::agent::Limits::max_stop_continuations`] times a turn).
//!
//! Extensions register callbacks with the `on_*` methods; the lesson's
//! [`crate::hooks::LessonHooks`] calls the `trigger_*` methods and nothing
//! else. Callbacks run in registration order, and for the events whose
//! result decides something, the first callback that returns `Some` wins:
//! the ones after it are not called.

use shared::hooks::{PromptCheck, ToolOutput};
use shared::protocol::{Message, ToolUse};

// ANCHOR: types
/// `UserPromptSubmit`: `Some(Replace(text))` sends `text` instead,
/// `Some(Block(reason))` sends nothing; `None` has no opinion.
pub type UserPromptSubmitHook = Box<dyn FnMut(&str) -> Option<PromptCheck> + Send>;

/// `PreToolUse`: `Some(reason)` blocks the call, and `reason` becomes its
/// `is_error` result.
pub type PreToolUseHook = Box<dyn FnMut(&ToolUse) -> Option<String> + Send>;

/// `PostToolUse`: sees each call and what it returned.
pub type PostToolUseHook = Box<dyn FnMut(&ToolUse, &ToolOutput) + Send>;

/// `Stop`: sees the history; `Some(prompt)` sends `prompt` as a new user
/// message and the loop goes on (a bounded number of times).
pub type StopHook = Box<dyn FnMut(&[Message]) -> Option<String> + Send>;
// ANCHOR_END: types

// ANCHOR: registry
/// Callbacks for each event, in registration order.
#[derive(Default)]
pub struct HookRegistry {
    user_prompt_submit: Vec<UserPromptSubmitHook>,
    pre_tool_use: Vec<PreToolUseHook>,
    post_tool_use: Vec<PostToolUseHook>,
    stop: Vec<StopHook>,
}

impl HookRegistry {
    /// A registry with no hooks: every trigger is a no-op.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a `UserPromptSubmit` hook.
    pub fn on_user_prompt_submit(
        &mut self,
        hook: impl FnMut(&str) -> Option<PromptCheck> + Send + 'static,
    ) {
        self.user_prompt_submit.push(Box::new(hook));
    }

    /// Adds a `PreToolUse` hook.
    pub fn on_pre_tool_use(
        &mut self,
        hook: impl FnMut(&ToolUse) -> Option<String> + Send + 'static,
    ) {
        self.pre_tool_use.push(Box::new(hook));
    }

    /// Adds a `PostToolUse` hook.
    pub fn on_post_tool_use(&mut self, hook: impl FnMut(&ToolUse, &ToolOutput) + Send + 'static) {
        self.post_tool_use.push(Box::new(hook));
    }

    /// Adds a `Stop` hook.
    pub fn on_stop(&mut self, hook: impl FnMut(&[Message]) -> Option<String> + Send + 'static) {
        self.stop.push(Box::new(hook));
    }

    /// The first `UserPromptSubmit` result, if any hook returns one.
    pub fn trigger_user_prompt_submit(&mut self, prompt: &str) -> Option<PromptCheck> {
        self.user_prompt_submit
            .iter_mut()
            .find_map(|hook| hook(prompt))
    }

    /// The first `PreToolUse` result: why the call is blocked, if it is.
    pub fn trigger_pre_tool_use(&mut self, call: &ToolUse) -> Option<String> {
        self.pre_tool_use.iter_mut().find_map(|hook| hook(call))
    }

    /// Runs every `PostToolUse` hook: observers have no result to stop at.
    pub fn trigger_post_tool_use(&mut self, call: &ToolUse, output: &ToolOutput) {
        for hook in &mut self.post_tool_use {
            hook(call, output);
        }
    }

    /// The first `Stop` result: a prompt that continues the turn, if any.
    pub fn trigger_stop(&mut self, history: &[Message]) -> Option<String> {
        self.stop.iter_mut().find_map(|hook| hook(history))
    }
}
// ANCHOR_END: registry
