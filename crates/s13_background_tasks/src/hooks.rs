//! What this lesson plugs into the loop: the state `LessonHooks` holds,
//! and what it does on each of the loop's events. How that state is built
//! is in the child module, `hooks/wiring.rs`, so that what is built and
//! what happens on each event are read apart.

mod wiring;

use shared::error::ApiError;
use shared::hooks::{Hooks, ModelCall, PromptCheck, ToolOutput};
use shared::protocol::{ContentBlock, Message, Response, SystemBlock, ToolSpec, ToolUse};

use crate::background::{BackgroundTasks, Finished};
use crate::compact::Compactor;
use crate::dispatch::{ToolContext, ToolRegistry};
use crate::hook_registry::HookRegistry;
use crate::memory::MemorySystem;
use crate::prompt::{
    ConversationBreakpoints, PromptAssembler, Section, log_cache_usage, mark_last_tool, sources,
};
use crate::recovery::Recovery;
use crate::subagent::SharedHooks;
use crate::todo::{self, TodoTracker};

/// The lesson's hooks: a system prompt, a dispatch map of tools (the
/// subagent's `task` among them), a registry of hooks around them that the
/// subagent shares, the todo list, which the map's `todo_write` and
/// `before_model_call` share, the compactor, which `compact`,
/// `before_model_call` and `call_model` share, the memory layer, the
/// assembler that builds the system prompt from all of them, the
/// recovery around `call_model`, and the commands running in the
/// background.
pub struct LessonHooks {
    tools: ToolRegistry,
    /// The context every tool call gets.
    context: ToolContext,
    registry: SharedHooks,
    todos: TodoTracker,
    /// The skill catalog, the system prompt's `skills` section.
    skill_catalog: String,
    compactor: Compactor,
    memory: MemorySystem,
    prompt: PromptAssembler,
    /// Retries, fallback and max_tokens recovery around `call_model`.
    recovery: Recovery,
    /// Commands `bash` started in the background, and their results.
    background: BackgroundTasks,
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

    /// The recovery state, to read its events or change its policy.
    pub fn recovery(&mut self) -> &mut Recovery {
        &mut self.recovery
    }

    /// The background tasks, to see what runs.
    pub fn background(&self) -> &BackgroundTasks {
        &self.background
    }

    /// The system prompt's assembler, to see its key and counts.
    pub fn prompt(&self) -> &PromptAssembler {
        &self.prompt
    }

    // ANCHOR: sections
    /// The system prompt's sections, from the state as it is now, most
    /// stable first. A section whose state is absent has empty text and is
    /// left out.
    pub fn prompt_sections(&self) -> Vec<Section> {
        vec![
            sources::identity(),
            sources::workspace(&self.context.workspace),
            sources::tools(self.tools.names()),
            sources::planning(&self.tools),
            Section::new("skills", self.skill_catalog.clone()),
            // The memory index, read from MEMORY.md for each request.
            Section::new("memory", self.memory.system_section().unwrap_or_default()),
        ]
    }
    // ANCHOR_END: sections
}

impl Hooks for LessonHooks {
    // ANCHOR: system_prompt
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        let sections = self.prompt_sections();
        self.prompt.build(&sections)
    }
    // ANCHOR_END: system_prompt

    // ANCHOR: tools
    fn tools(&mut self) -> Vec<ToolSpec> {
        let mut specs = self.tools.specs();
        mark_last_tool(&mut specs);
        specs
    }
    // ANCHOR_END: tools

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
        self.recovery.start_turn();
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

    // ANCHOR: call_model
    async fn call_model(&mut self, call: ModelCall<'_, '_>) -> Result<Response, ApiError> {
        // The conversation's cache breakpoints are set on each request as it
        // goes out, never in the stored history.
        let model = ConversationBreakpoints::new(call.model);
        let mut call = call;
        call.model = &model;
        let response = self.recovery.send(&mut self.compactor, call).await?;
        log_cache_usage(&response.usage);
        Ok(response)
    }
    // ANCHOR_END: call_model
    // ANCHOR_END: compaction

    // ANCHOR: notifications
    fn after_tool_results(&mut self, results: &mut Vec<ContentBlock>) {
        // After the results, never before them: the API requires a user
        // message's tool_result blocks to come first.
        results.extend(
            self.background
                .take_finished()
                .iter()
                .map(|finished| ContentBlock::text(finished.notification())),
        );
    }

    async fn idle_work(&mut self) -> String {
        let finished = self.background.next_finished().await;
        finished
            .iter()
            .map(Finished::notification)
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn on_exit(&mut self) {
        self.background.stop_all().await;
    }
    // ANCHOR_END: notifications
}
