//! The hook registry: callbacks per event, triggered by the loop's hook points.
//!
//! Four events cover one cycle of the agent:
//!
//! * `UserPromptSubmit`, before a typed prompt reaches the model: a result
//!   replaces the prompt or blocks it.
//! * `PreToolUse`, before a tool runs: a result blocks the call and is
//!   handed to the model as the call's `is_error` result.
//! * `PostToolUse`, after a tool ran: it cannot undo the call, but a result
//!   (feedback) is added to the call's result, so the model reads it with
//!   the output; most of these hooks only observe.
//! * `Stop`, when the model ends its turn: a result is sent as a new
//!   prompt and the loop goes on (at most
//!   [`shared::agent::Limits::max_stop_continuations`] times a turn).
//!
//! Extensions register callbacks with the `on_*` methods; the lesson's
//! [`crate::hooks::LessonHooks`] calls the `trigger_*` methods and nothing
//! else. Callbacks run in registration order, and for the events whose
//! result decides something, the first callback that returns `Some` wins:
//! the ones after it are not called.
//!
//! A registry is a handle: its clones share one set of hooks, so later
//! lessons hand it to every agent that must pass the same hooks. A hook may
//! take long — the permission hook waits for the user's answer, a command
//! hook for its process — so a trigger holds the registry's lock only to
//! copy out the list it runs, and runs the hooks with the lock released.
//! While one agent's hook waits, any other agent's hooks run, and a hook
//! may be added. A hook is therefore `Fn` and `Sync`: it may run on two
//! calls at once, and a hook with state guards that state itself.

use std::sync::{Arc, Mutex, MutexGuard};

use shared::hooks::{PromptCheck, ToolOutput};
use shared::protocol::{Message, ToolUse};
use shared::sync::LockExt;

// ANCHOR: types
/// `UserPromptSubmit`: `Some(Replace(text))` sends `text` instead,
/// `Some(Block(reason))` sends nothing; `None` has no opinion.
pub type UserPromptSubmitHook = Arc<dyn Fn(&str) -> Option<PromptCheck> + Send + Sync>;

/// `PreToolUse`: `Some(reason)` blocks the call, and `reason` becomes its
/// `is_error` result.
pub type PreToolUseHook = Arc<dyn Fn(&ToolUse) -> Option<String> + Send + Sync>;

/// `PostToolUse`: sees each call and what it returned; `Some(feedback)` is
/// added to the call's result for the model to read.
pub type PostToolUseHook = Arc<dyn Fn(&ToolUse, &ToolOutput) -> Option<String> + Send + Sync>;

/// `Stop`: sees the history; `Some(prompt)` sends `prompt` as a new user
/// message and the loop goes on (a bounded number of times).
pub type StopHook = Arc<dyn Fn(&[Message]) -> Option<String> + Send + Sync>;
// ANCHOR_END: types

// ANCHOR: registry
/// Callbacks for each event, in registration order. Clones share them.
#[derive(Clone, Default)]
pub struct HookRegistry {
    hooks: Arc<Mutex<Hooks>>,
}

/// The lists themselves. Cloning them copies `Arc`s, not hooks.
#[derive(Clone, Default)]
struct Hooks {
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
        hook: impl Fn(&str) -> Option<PromptCheck> + Send + Sync + 'static,
    ) {
        self.lock().user_prompt_submit.push(Arc::new(hook));
    }

    /// Adds a `PreToolUse` hook.
    pub fn on_pre_tool_use(
        &mut self,
        hook: impl Fn(&ToolUse) -> Option<String> + Send + Sync + 'static,
    ) {
        self.lock().pre_tool_use.push(Arc::new(hook));
    }

    /// Adds a `PostToolUse` hook that only observes.
    pub fn on_post_tool_use(
        &mut self,
        hook: impl Fn(&ToolUse, &ToolOutput) + Send + Sync + 'static,
    ) {
        self.on_post_tool_use_feedback(move |call, output| {
            hook(call, output);
            None
        });
    }

    /// Adds a `PostToolUse` hook whose `Some(feedback)` the model reads,
    /// added to that call's result.
    pub fn on_post_tool_use_feedback(
        &mut self,
        hook: impl Fn(&ToolUse, &ToolOutput) -> Option<String> + Send + Sync + 'static,
    ) {
        self.lock().post_tool_use.push(Arc::new(hook));
    }

    /// Adds a `Stop` hook.
    pub fn on_stop(&mut self, hook: impl Fn(&[Message]) -> Option<String> + Send + Sync + 'static) {
        self.lock().stop.push(Arc::new(hook));
    }

    /// The first `UserPromptSubmit` result, if any hook returns one.
    pub fn trigger_user_prompt_submit(&self, prompt: &str) -> Option<PromptCheck> {
        let hooks = self.lock().user_prompt_submit.clone();
        hooks.iter().find_map(|hook| hook(prompt))
    }

    /// The first `PreToolUse` result: why the call is blocked, if it is.
    pub fn trigger_pre_tool_use(&self, call: &ToolUse) -> Option<String> {
        // ANCHOR: exercise-s04-pre_tool_use
        let hooks = self.lock().pre_tool_use.clone();
        hooks.iter().find_map(|hook| hook(call))
        // ANCHOR_END: exercise-s04-pre_tool_use
    }

    /// Runs every `PostToolUse` hook (none stops the others) and returns
    /// the call's output with their feedback added: still one result.
    pub fn trigger_post_tool_use(&self, call: &ToolUse, output: ToolOutput) -> ToolOutput {
        // ANCHOR: exercise-s04-post_tool_use
        let hooks = self.lock().post_tool_use.clone();
        let feedback: Vec<String> = hooks
            .iter()
            .filter_map(|hook| hook(call, &output))
            .collect();
        with_feedback(output, &feedback)
        // ANCHOR_END: exercise-s04-post_tool_use
    }

    /// The first `Stop` result: a prompt that continues the turn, if any.
    pub fn trigger_stop(&self, history: &[Message]) -> Option<String> {
        let hooks = self.lock().stop.clone();
        hooks.iter().find_map(|hook| hook(history))
    }

    /// Locks the lists, for as long as it takes to change or copy one. No
    /// hook runs under this lock, so a panic cannot leave it half-changed.
    fn lock(&self) -> MutexGuard<'_, Hooks> {
        self.hooks.locked()
    }
}
// ANCHOR_END: registry

// ANCHOR: feedback
/// How feedback is introduced in a result, so the model can tell it from
/// the tool's own output.
pub const FEEDBACK_HEADER: &str = "[PostToolUse hook feedback]";

/// `output` with each line of `feedback` added after it, under
/// [`FEEDBACK_HEADER`]. The call already ran, so whether it failed stays
/// as it was.
pub fn with_feedback(mut output: ToolOutput, feedback: &[String]) -> ToolOutput {
    if feedback.is_empty() {
        return output;
    }
    let feedback = format!("{FEEDBACK_HEADER}\n{}", feedback.join("\n"));
    output.text = if output.text.is_empty() {
        feedback
    } else {
        format!("{}\n\n{feedback}", output.text)
    };
    output
}
// ANCHOR_END: feedback
