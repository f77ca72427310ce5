//! How this lesson's hooks are built: everything `LessonHooks` holds is
//! made here, once, before the first turn. What the hooks do with it on
//! each of the loop's events is in the parent module, `hooks.rs`.

use shared::cli::Setup;

use crate::Options;
use crate::background::{self, BackgroundTasks};
use crate::builtin_hooks;
use crate::compact::Compactor;
use crate::cron::{self, CronScheduler};
use crate::dispatch::{ToolContext, base_tools};
use crate::hook_registry::HookRegistry;
use crate::memory::MemorySystem;
use crate::prompt::PromptAssembler;
use crate::recovery::Recovery;
use crate::skills;
use crate::subagent::{self, Subagent};
use crate::tasks::tools::Caller;
use crate::tasks::{self, TASKS_DIR, TaskBoard};
use crate::team::{self, MessageBus, Protocols, Roster, Team};
use crate::todo::TodoTracker;

use super::LessonHooks;

impl LessonHooks {
    /// Hooks working in the setup's workspace, with the five base tools
    /// (`bash` able to run in the background), `todo_write`, `compact`,
    /// `load_skill`, `task`, the five task-board tools, the three cron
    /// tools, the six team tools, and this lesson's hooks, reporting to the setup's notices,
    /// asking `options.approver` before risky calls, and keeping memories.
    /// `setup.model` is expected to be `recovery`'s model stack (see
    /// [`crate::build`]). Fails only when a skills directory was named that
    /// does not exist.
    pub fn new(setup: &Setup, options: Options, recovery: Recovery) -> anyhow::Result<Self> {
        let mut registry = HookRegistry::new();
        builtin_hooks::register(
            &mut registry,
            setup.workspace(),
            setup.notices(),
            options.approver,
        );
        let mut tools = base_tools();
        // ANCHOR: register_background
        // `bash` again, now able to leave a command running and answer at
        // once. It takes the base tool's place, first in the list.
        let background = BackgroundTasks::new(setup.notices().clone());
        background::tool::register(&mut tools, &background);
        // ANCHOR_END: register_background
        let todos = TodoTracker::new();
        todos.register(&mut tools);
        // The summaries go through the same model as the conversation.
        let compactor = Compactor::new(setup, options.compact);
        compactor.register(&mut tools);
        // ANCHOR: register_skills
        // The skills: their catalog to the system prompt, `load_skill` to
        // the tools.
        let skills = skills::load(&options.skills, setup.workspace().root(), setup.notices())?;
        let skill_catalog = skills.catalog();
        skills::register_tool(&mut tools, skills);
        // ANCHOR_END: register_skills
        // ANCHOR: register_task
        // Subagents think with the parent's model, behind the parent's hooks,
        // and compact their own histories by the parent's thresholds.
        let subagent = Subagent::new(
            setup.model().clone(),
            setup.model_id().to_owned(),
            compactor.config.clone(),
        );
        subagent::register(&mut tools, subagent, registry.clone());
        // ANCHOR_END: register_task
        // ANCHOR: register_board
        // The task board of the workspace, shared by every call (and, from
        // lesson 15 on, by every agent working here). The lead's tools
        // know its team, to keep it from completing a teammate's task.
        let board = TaskBoard::new(
            setup.workspace().root().join(TASKS_DIR),
            setup.notices().clone(),
        );
        let roster = Roster::default();
        tasks::tools::register(&mut tools, &board, &Caller::Lead(roster.clone()));
        // ANCHOR_END: register_board
        // ANCHOR: register_cron
        // The scheduler of this workspace: durable jobs are loaded now, and
        // the three cron tools work on it.
        let cron = CronScheduler::new(
            setup.workspace().root(),
            options.clock,
            setup.notices().clone(),
        );
        cron::tools::register(&mut tools, &cron);
        // ANCHOR_END: register_cron
        // ANCHOR: register_team
        // The team: teammates think with the lead's model stack, behind the
        // lead's hooks, and talk through mailboxes in the workspace.
        // Keyed by the team's name, so another team's lead in this
        // workspace never reads this team's mail.
        let mailboxes = team::mailbox_dir(setup.workspace().root(), &options.team)
            .map_err(|error| anyhow::anyhow!("invalid team name: {error}"))?;
        let team = Team::new(team::Shared {
            bus: MessageBus::new(mailboxes),
            protocols: Protocols::new(),
            roster,
            board,
            model: setup.model().clone(),
            model_id: setup.model_id().to_owned(),
            compact: compactor.config.clone(),
            registry: registry.clone(),
            context: ToolContext::new(setup.workspace().clone(), setup.notices().clone()),
        });
        team::tools::register(&mut tools, &team);
        // ANCHOR_END: register_team
        Ok(Self {
            tools,
            context: ToolContext::new(setup.workspace().clone(), setup.notices().clone()),
            registry,
            todos,
            skill_catalog,
            compactor,
            // Memory's side queries go through the agent's own model.
            memory: MemorySystem::new(setup),
            prompt: PromptAssembler::new(setup.notices().clone()),
            recovery,
            background,
            cron,
            team,
        })
    }
}
