//! What this lesson plugs into the loop.

use std::sync::Arc;

use shared::error::ApiError;
use shared::hooks::{Hooks, ModelCall, PromptCheck, ToolOutput};
use shared::protocol::{Message, Response, SystemBlock, ToolSpec, ToolUse};
use shared::tools::Workspace;

use crate::builtin_hooks;
use crate::compact::Compactor;
use crate::dispatch::{ToolRegistry, base_tools};
use crate::hook_registry::HookRegistry;
use crate::memory::MemorySystem;
use crate::permission::Approver;
use crate::prompt::{PromptAssembler, Section, log_cache_usage, mark_last_tool, sources};
use crate::recovery::Recovery;
use crate::skills::{self, SkillRegistry};
use crate::subagent::{self, Subagent};
use crate::todo::TodoTracker;

/// The lesson's hooks: a system prompt, a dispatch map of tools, a
/// registry of hooks around them, the todo list, which the map's
/// `todo_write` and `before_model_call` share, the subagent behind
/// `task`, the compactor, which `compact`, `before_model_call` and
/// `call_model` share, the memory layer, and the assembler that builds the
/// system prompt from all of them.
pub struct LessonHooks {
    workspace: Workspace,
    tools: ToolRegistry,
    registry: HookRegistry,
    todos: TodoTracker,
    subagent: Subagent,
    /// The skill catalog, the system prompt's `skills` section (set by
    /// [`Self::with_skills`]).
    skill_catalog: Option<String>,
    compactor: Compactor,
    memory: MemorySystem,
    prompt: PromptAssembler,
    /// Retries, fallback and max_tokens recovery around `call_model`.
    recovery: Recovery,
}

impl LessonHooks {
    /// Hooks working in `workspace`, with the five base tools, `todo_write`,
    /// `compact`, `task` run by `subagent`, and this lesson's hooks, asking
    /// `approver` before risky calls, and keeping `memory`.
    pub fn new(
        workspace: Workspace,
        approver: Box<dyn Approver>,
        subagent: Subagent,
        compactor: Compactor,
        memory: MemorySystem,
    ) -> Self {
        let mut tools = base_tools(&workspace);
        let todos = TodoTracker::new();
        todos.register(&mut tools);
        compactor.register(&mut tools);
        let mut registry = HookRegistry::new();
        builtin_hooks::register(&mut registry, &workspace, approver);
        Self {
            workspace,
            tools,
            registry,
            todos,
            subagent,
            skill_catalog: None,
            compactor,
            memory,
            prompt: PromptAssembler::new(),
            recovery: Recovery::default(),
        }
    }

    // ANCHOR: with_skills
    /// Adds the skills: their catalog to the system prompt, `load_skill` to
    /// the tools.
    pub fn with_skills(mut self, registry: Arc<SkillRegistry>) -> Self {
        self.skill_catalog = Some(registry.catalog());
        skills::register_tool(&mut self.tools, registry, &self.workspace);
        self
    }
    // ANCHOR_END: with_skills

    /// The hook registry, to add hooks of your own.
    pub fn registry(&mut self) -> &mut HookRegistry {
        &mut self.registry
    }

    /// The compactor, to read its state or change its thresholds.
    pub fn compactor(&mut self) -> &mut Compactor {
        &mut self.compactor
    }

    /// Replaces the recovery policy and its state.
    pub fn with_recovery(mut self, recovery: Recovery) -> Self {
        self.recovery = recovery;
        self
    }

    /// The recovery state, to read its events or change its policy.
    pub fn recovery(&mut self) -> &mut Recovery {
        &mut self.recovery
    }

    /// The dispatch map, to add or remove tools between calls.
    pub fn tool_registry(&mut self) -> &mut ToolRegistry {
        &mut self.tools
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
        // `task` is run by these hooks rather than the dispatch map, but the
        // model is offered it all the same (see `tools`).
        let mut tool_names = self.tools.names();
        tool_names.push(subagent::TASK_TOOL);
        vec![
            sources::identity(),
            sources::workspace(&self.workspace),
            sources::tools(tool_names),
            sources::planning(&self.tools),
            Section::new("skills", self.skill_catalog.clone().unwrap_or_default()),
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

    // ANCHOR: task
    // ANCHOR: tools
    fn tools(&mut self) -> Vec<ToolSpec> {
        let mut specs = self.tools.specs();
        specs.push(subagent::spec());
        mark_last_tool(&mut specs);
        specs
    }
    // ANCHOR_END: tools

    // ANCHOR: triggers
    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        if let Some(reason) = self.registry.trigger_pre_tool_use(call) {
            return ToolOutput::error(reason);
        }
        // `task` needs the registry for its subagent, so it is run here
        // rather than from the dispatch map, whose handlers own their data.
        let output = if call.name == subagent::TASK_TOOL {
            self.subagent.run(call, &mut self.registry).await
        } else {
            self.tools.dispatch(call).await
        };
        self.registry.trigger_post_tool_use(call, &output);
        output
    }
    // ANCHOR_END: task

    fn on_user_prompt(&mut self, prompt: &str) -> PromptCheck {
        self.memory.note_prompt(prompt);
        let check = self
            .registry
            .trigger_user_prompt_submit(prompt)
            .unwrap_or(PromptCheck::Accept);
        if !matches!(check, PromptCheck::Block(_)) {
            self.compactor.note_prompt(prompt);
            self.recovery.start_turn();
        }
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
        self.todos.remind_if_due(history);
        // Recall last, so the recalled memories are not compacted away at once.
        self.memory.recall_for_turn(history).await;
    }

    // ANCHOR: call_model
    async fn call_model(&mut self, call: ModelCall<'_, '_>) -> Result<Response, ApiError> {
        let response = self.recovery.send(&mut self.compactor, call).await?;
        log_cache_usage(&response.usage);
        Ok(response)
    }
    // ANCHOR_END: call_model
    // ANCHOR_END: compaction
}
