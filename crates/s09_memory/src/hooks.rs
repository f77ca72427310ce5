//! What this lesson plugs into the loop: the state `LessonHooks` holds,
//! and what it does on each of the loop's events. How that state is built
//! is in the child module, `hooks/wiring.rs`, so that what is built and
//! what happens on each event are read apart.

mod wiring;

use shared::error::ApiError;
use shared::hooks::{Hooks, ModelCall, PromptCheck, ToolOutput};
use shared::protocol::{Message, Response, SystemBlock, ToolSpec, ToolUse};

use crate::compact::{Compactor, send_with_reactive_compaction};
use crate::dispatch::{ToolContext, ToolRegistry};
use crate::hook_registry::HookRegistry;
use crate::memory::MemorySystem;
use crate::subagent::SharedHooks;
use crate::todo::{self, TodoTracker};

/// The lesson's hooks: a system prompt, a dispatch map of tools (the
/// subagent's `task` among them), a registry of hooks around them that the
/// subagent shares, the todo list, which the map's `todo_write` and
/// `before_model_call` share, the compactor, which `compact`,
/// `before_model_call` and `call_model` share, and the memory layer.
pub struct LessonHooks {
    tools: ToolRegistry,
    /// The context every tool call gets.
    context: ToolContext,
    registry: SharedHooks,
    todos: TodoTracker,
    /// The skill catalog, a second system block.
    skill_catalog: String,
    compactor: Compactor,
    memory: MemorySystem,
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

    /// The compactor, to read its state or change its thresholds
    /// (subagents keep the thresholds the agent was built with).
    pub fn compactor(&mut self) -> &mut Compactor {
        &mut self.compactor
    }
}

impl Hooks for LessonHooks {
    // ANCHOR: system_prompt
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        let mut system = vec![SystemBlock::text(format!(
            "You are a coding agent at {}. Use tools to solve tasks. Act, don't explain. \
             Before multi-step work, plan it with todo_write; then keep the list current: \
             one task in_progress at a time, each marked completed as soon as it is done.",
            self.context.workspace.root().display()
        ))];
        system.push(SystemBlock::text(&self.skill_catalog));
        // The memory index, read from MEMORY.md for each request.
        system.extend(self.memory.system_block());
        system
    }
    // ANCHOR_END: system_prompt

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
        let check = self
            .registry
            .trigger_user_prompt_submit(prompt)
            .unwrap_or(PromptCheck::Accept);
        // What the model will be sent, after the hooks had their say: a
        // blocked prompt is not sent, a replaced one is sent as replaced.
        let sent = match &check {
            PromptCheck::Accept => prompt,
            PromptCheck::Replace(text) => text.as_str(),
            PromptCheck::Block(_) => return check,
        };
        self.compactor.note_prompt(sent);
        self.memory.note_prompt(sent);
        check
    }

    async fn on_stop(&mut self, history: &[Message]) -> Option<String> {
        let next = self.registry.trigger_stop(history);
        // Extract only when the turn really ends; memory never continues it.
        if next.is_none() {
            self.memory.after_turn(history).await;
        }
        next
    }
    // ANCHOR_END: triggers

    // ANCHOR: compaction
    async fn before_model_call(&mut self, history: &mut Vec<Message>) {
        // Compaction first, so a reminder added now is not compacted away.
        self.compactor.before_model_call(history).await;
        if self.todos.remind_if_due(history) {
            self.context.notices.emit(
                todo::TOOL_NAME,
                format!(
                    "reminder sent: open tasks, and no update for {} rounds",
                    todo::REMIND_AFTER_ROUNDS
                ),
            );
        }
        // Recall last, so the recalled memories are not compacted away at once.
        self.memory.recall_for_turn(history).await;
    }

    async fn call_model(&mut self, call: ModelCall<'_, '_>) -> Result<Response, ApiError> {
        send_with_reactive_compaction(&mut self.compactor, call).await
    }
    // ANCHOR_END: compaction
}
