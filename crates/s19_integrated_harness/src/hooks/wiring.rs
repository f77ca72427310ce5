//! How this lesson's hooks are built: everything `LessonHooks` holds is
//! made here, once, before the first turn. What the hooks do with it on
//! each of the loop's events is in the parent module, `hooks.rs`.

use std::time::{SystemTime, UNIX_EPOCH};

use shared::cli::Setup;

use crate::Options;
use crate::background::{self, BackgroundTasks};
use crate::builtin_hooks;
use crate::compact::Compactor;
use crate::cron::{self, CronScheduler};
use crate::dispatch::{ToolContext, base_tools};
use crate::hook_registry::HookRegistry;
use crate::mcp::{self, McpHub, McpSync};
use crate::memory::MemorySystem;
use crate::prompt::PromptAssembler;
use crate::recovery::Recovery;
use crate::settings::command_hooks::{self, HookEnv};
use crate::skills;
use crate::subagent::{self, Subagent};
use crate::tasks::tools::Caller;
use crate::tasks::{self, TASKS_DIR, TaskBoard};
use crate::team::{self, MessageBus, Protocols, Roster, ScanCount, Team};
use crate::todo::TodoTracker;
use crate::worktrees::{self, WorktreeManager};

use super::LessonHooks;

impl LessonHooks {
    /// Hooks working in the setup's workspace, with the five base tools
    /// (`bash` able to run in the background), `todo_write`, `compact`,
    /// `load_skill`, `task`, the five task-board tools, the three cron
    /// tools, the six team tools, the four worktree tools, the two MCP
    /// tools (and the connected servers' tools), and this
    /// lesson's hooks — the settings file's command hooks first — reporting
    /// to the setup's notices, asking `options.approver` before risky calls
    /// (after the settings file's rules), and keeping memories.
    /// `setup.model` is expected to be `recovery`'s model stack (see
    /// [`crate::build`]). Fails only when a skills directory was named that
    /// does not exist.
    pub fn new(setup: &Setup, options: Options, recovery: Recovery) -> anyhow::Result<Self> {
        // ANCHOR: register_mcp_gate
        // The MCP servers of the workspace, known before the hooks: the
        // permission gate asks by what each server says of its tools.
        let mcp = McpHub::new(
            setup.workspace().root(),
            setup.notices().clone(),
            options.mcp,
        );
        // A rule for a server no configuration names matches nothing:
        // likely a typo, so say so now rather than never.
        for rule in options
            .settings
            .permissions
            .unknown_mcp_servers(&mcp.configured())
        {
            setup.notices().emit(
                mcp::MCP_TAG,
                format!(
                    "the permission rule {rule} names an MCP server that is not configured, \
                     so it matches no tool"
                ),
            );
        }
        let mut registry = HookRegistry::new();
        // ANCHOR: register_settings
        // The settings file's command hooks run before the built-in ones,
        // as Claude Code's run before its permission check: a hook that
        // blocks a call spares the user a question about it.
        command_hooks::register(
            &mut registry,
            &options.settings.hooks,
            &HookEnv {
                cwd: setup.workspace().root().to_path_buf(),
                session_id: session_id(),
                notices: setup.notices().clone(),
            },
        );
        builtin_hooks::register(
            &mut registry,
            setup.workspace(),
            setup.notices(),
            options.approver,
            &mcp,
            options.settings.permissions.clone(),
        );
        // ANCHOR_END: register_settings
        // ANCHOR_END: register_mcp_gate
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
        let skills_found = skills
            .dir()
            .map(|dir| (dir.to_path_buf(), skills.skills().len()));
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
        // ANCHOR: register_worktrees
        // The workspace's git worktrees: the lead's four tools, and the
        // place a teammate's tools run once it holds a bound task.
        let worktrees = WorktreeManager::new(setup.workspace().root());
        // ANCHOR_END: register_worktrees
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
            autonomy: options.autonomy,
            scans: ScanCount::default(),
            worktrees: worktrees.clone(),
        });
        team::tools::register(&mut tools, &team);
        worktrees::tools::register(&mut tools, &worktrees);
        // ANCHOR_END: register_team
        // ANCHOR: register_mcp
        // `connect_mcp` and `list_mcp`, last of the built-in tools; the
        // servers' tools come after them, once connected.
        mcp::tools::register(&mut tools, &mcp);
        // ANCHOR_END: register_mcp
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
            mcp,
            mcp_sync: McpSync::default(),
            settings: options.settings,
            stop_continuations: 0,
            model_id: setup.model_id().to_owned(),
            provider: setup.model().provider().to_string(),
            skills_found,
        })
    }
}

/// An id for this session, for the hooks' JSON: the start time and the
/// process, which no two sessions share.
fn session_id() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis());
    format!("{millis:x}-{}", std::process::id())
}
