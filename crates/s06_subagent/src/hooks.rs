//! What this lesson plugs into the loop: the state `LessonHooks` holds,
//! and what it does on each of the loop's events. How that state is built
//! is in the child module, `hooks/wiring.rs`, so that what is built and
//! what happens on each event are read apart.

mod wiring;

use shared::hooks::{Hooks, PromptCheck, ToolOutput};
use shared::protocol::{Message, SystemBlock, ToolSpec, ToolUse};

use crate::dispatch::{ToolContext, ToolRegistry};
use crate::hook_registry::HookRegistry;
use crate::subagent::SharedHooks;
use crate::todo::{self, TodoTracker};

/// The lesson's hooks: a system prompt, a dispatch map of tools (the
/// subagent's `task` among them), a registry of hooks around them that the
/// subagent shares, and the todo list, which the map's `todo_write` and
/// `before_model_call` share.
pub struct LessonHooks {
    tools: ToolRegistry,
    /// The context every tool call gets.
    context: ToolContext,
    registry: SharedHooks,
    todos: TodoTracker,
}

impl LessonHooks {
    /// The dispatch map, to add or remove tools between calls.
    pub fn tool_registry(&mut self) -> &mut ToolRegistry {
        &mut self.tools
    }

    /// The hook registry, to add hooks of your own: a handle on the one
    /// the subagents share, so they run them too.
    pub fn registry(&mut self) -> HookRegistry {
        self.registry.clone()
    }
}

impl Hooks for LessonHooks {
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        vec![SystemBlock::text(format!(
            "You are a coding agent at {}. Use tools to solve tasks. Act, don't explain. \
             Before multi-step work, plan it with todo_write; then keep the list current: \
             one task in_progress at a time, each marked completed as soon as it is done.",
            self.context.workspace.root().display()
        ))]
    }

    fn tools(&mut self) -> Vec<ToolSpec> {
        self.tools.specs()
    }

    // ANCHOR: triggers
    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        // No lock is held across the tool, nor across the hooks: `task`'s
        // subagent triggers the same registry for its own calls meanwhile.
        if let Some(reason) = self.registry.trigger_pre_tool_use(call) {
            return ToolOutput::error(reason);
        }
        let output = self.tools.dispatch(call, &self.context).await;
        // PostToolUse feedback is added to the call's one result.
        self.registry.trigger_post_tool_use(call, output)
    }

    fn on_user_prompt(&mut self, prompt: &str) -> PromptCheck {
        self.registry
            .trigger_user_prompt_submit(prompt)
            .unwrap_or(PromptCheck::Accept)
    }

    async fn on_stop(&mut self, history: &[Message]) -> Option<String> {
        self.registry.trigger_stop(history)
    }
    // ANCHOR_END: triggers

    async fn before_model_call(&mut self, history: &mut Vec<Message>) {
        if self.todos.remind_if_due(history) {
            self.context.notices.emit(
                todo::TOOL_NAME,
                format!(
                    "reminder sent: open tasks, and no update for {} rounds",
                    todo::REMIND_AFTER_ROUNDS
                ),
            );
        }
    }
}
