//! What this lesson plugs into the loop: the state `LessonHooks` holds,
//! and what it does on each of the loop's events. How that state is built
//! is in the child module, `hooks/wiring.rs`, so that what is built and
//! what happens on each event are read apart.

mod wiring;

use std::path::PathBuf;

use shared::agent::Limits;
use shared::error::ApiError;
use shared::hooks::{Hooks, ModelCall, PromptCheck, ToolOutput};
use shared::protocol::{ContentBlock, Message, Response, SystemBlock, ToolSpec, ToolUse};

use crate::background::{BackgroundTasks, Finished};
use crate::compact::Compactor;
use crate::cron::CronScheduler;
use crate::dispatch::{ToolContext, ToolRegistry};
use crate::hook_registry::HookRegistry;
use crate::mcp::{self, McpHub, McpSync};
use crate::memory::MemorySystem;
use crate::prompt::{
    ConversationBreakpoints, PromptAssembler, Section, log_cache_usage, mark_last_tool, sources,
};
use crate::recovery::Recovery;
use crate::settings::Settings;
use crate::slash::{self, StatusView};
use crate::subagent::SharedHooks;
use crate::team::Team;
use crate::todo::{self, TodoTracker};
use crate::workflow::WorkflowRuntime;
use crate::workflow::report::RunFinished;

/// The lesson's hooks: a system prompt, a dispatch map of tools (the
/// subagent's `task` among them), a registry of hooks around them that the
/// subagent shares, the todo list, which the map's `todo_write` and
/// `before_model_call` share, the compactor, which `compact`,
/// `before_model_call` and `call_model` share, the memory layer, the
/// assembler that builds the system prompt from all of them, the
/// recovery around `call_model`, the commands running in the background,
/// the cron scheduler, the team, the MCP servers, what the settings
/// file configured, for `/status`, and the workflow runs.
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
    /// The scheduled jobs, and the queue of those that came due.
    cron: CronScheduler,
    /// The teammates, their mailboxes and protocols.
    team: Team,
    /// The connections to MCP servers, and what of their tools the
    /// dispatch map has.
    mcp: McpHub,
    mcp_sync: McpSync,
    /// The settings the agent was built from (lesson 19).
    settings: Settings,
    /// The workflow runs started by `Workflow` (lesson 20).
    workflows: WorkflowRuntime,
    /// How often the Stop hooks sent the model back this turn: at the
    /// loop's limit the hooks end the turn themselves, so memory still
    /// sees its end.
    stop_continuations: usize,
    /// The model as the front end chose it.
    model_id: String,
    provider: String,
    /// The skills directory and how many skills it holds.
    skills_found: Option<(PathBuf, usize)>,
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

    /// The team, to see its members or send it mail.
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// The cron scheduler, to tick it or see its jobs.
    pub fn cron(&self) -> &CronScheduler {
        &self.cron
    }

    /// The MCP servers, to see what is connected.
    pub fn mcp(&self) -> &McpHub {
        &self.mcp
    }

    /// The workflow runs, to see what runs or take what finished.
    pub fn workflows(&self) -> &WorkflowRuntime {
        &self.workflows
    }

    /// The system prompt's assembler, to see its key and counts.
    pub fn prompt(&self) -> &PromptAssembler {
        &self.prompt
    }

    // ANCHOR: status_view
    /// What `/status` shows, as things are now.
    pub fn status_view(&self) -> StatusView {
        let shared = self.team.shared();
        StatusView {
            lesson: crate::LESSON.id,
            model_id: self.model_id.clone(),
            provider: self.provider.clone(),
            settings: self.settings.clone(),
            skills: self.skills_found.clone(),
            compact: self.compactor.config.clone(),
            recovery: self.recovery.policy(),
            autonomy: shared.autonomy.clone(),
            teammates: self.team.list(),
            background: self.background.running(),
            workflows: self.workflows.running(),
            saved_scripts: self
                .workflows
                .registry()
                .script_names()
                .into_iter()
                .map(str::to_string)
                .collect(),
            cron_jobs: self.cron.list().len(),
            tasks: shared.board.list(),
            worktrees: shared.worktrees.list().map_err(std::sync::Arc::new),
            mcp: self.mcp.status(),
        }
    }
    // ANCHOR_END: status_view

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
            // Which MCP servers there are; changes only with a connection.
            Section::new("mcp", self.mcp.prompt_section()),
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
        // A turn starts: the Stop hooks may send the model back again.
        self.stop_continuations = 0;
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
        // ANCHOR: stop_limit
        // The Stop hooks send the model back at most as often as the loop
        // allows. One more is refused here rather than by the loop, so
        // the turn's real end is known: without that, a hook that is never
        // satisfied (a settings file's Stop command that always exits 2)
        // would end the turn with no memory extraction.
        let next = self
            .registry
            .trigger_stop(history)
            .filter(|_| self.stop_continuations < Limits::default().max_stop_continuations);
        if next.is_some() {
            self.stop_continuations += 1;
        }
        // ANCHOR_END: stop_limit
        // Extract only when the turn really ends; memory never continues it.
        if next.is_none() {
            self.memory.after_turn(history).await;
        }
        next
    }
    // ANCHOR_END: triggers

    // ANCHOR: compaction
    async fn before_model_call(&mut self, history: &mut Vec<Message>) {
        // ANCHOR: mcp_sync
        // The MCP tools into the dispatch map if they changed (a server
        // connected, changed its list or died), before the system prompt
        // and the tools of this call are read from it.
        self.mcp.settle().await;
        if self.mcp_sync.sync(&mut self.tools, &self.mcp) {
            self.context.notices.emit(
                mcp::MCP_TAG,
                format!("tool pool rebuilt: {} MCP tools", self.mcp.tools().len()),
            );
        }
        // ANCHOR_END: mcp_sync
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
        // ANCHOR: team_events
        // What the team sent since the last call: results, idle reports,
        // protocol replies. After the round's tool results, like any text.
        if let Some(events) = self.team.take_events() {
            shared::history::push_user(history, vec![ContentBlock::text(events)]);
        }
        // ANCHOR_END: team_events
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
        // Finished workflow runs, in the same place and the same format.
        results.extend(
            self.workflows
                .take_finished()
                .iter()
                .map(|finished| ContentBlock::text(finished.notification())),
        );
    }

    // ANCHOR: idle_work
    async fn idle_work(&mut self) -> String {
        // Whichever is ready first. Both waits are cancel-safe, so the one
        // that loses keeps its work for the next call.
        tokio::select! {
            finished = self.background.next_finished() => finished
                .iter()
                .map(Finished::notification)
                .collect::<Vec<_>>()
                .join("\n"),
            job = self.cron.next_due() => format!("[Scheduled] {}", job.prompt),
            events = self.team.next_events() => events,
            finished = self.workflows.next_finished() => finished
                .iter()
                .map(RunFinished::notification)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
    // ANCHOR_END: idle_work

    // ANCHOR: pending
    /// A workflow run going, or finished and not yet told: `-p` waits for
    /// it, since its result is what the request was for.
    fn has_pending_work(&mut self) -> bool {
        self.workflows.has_pending()
    }
    // ANCHOR_END: pending

    async fn on_exit(&mut self) {
        // Workflow runs first: their agents' tools may have started work
        // of their own.
        self.workflows.stop_all().await;
        self.background.stop_all().await;
        self.team.stop_all().await;
        // No MCP server outlives the session.
        self.mcp.stop_all().await;
    }
    // ANCHOR_END: notifications

    // ANCHOR: slash_command
    fn slash_command(&mut self, line: &str) -> Option<String> {
        // A known command is answered and a mistyped one gets the list;
        // neither reaches the model. Any other line (a path) is a prompt.
        slash::answer(line, || self.status_view())
    }
    // ANCHOR_END: slash_command
}
