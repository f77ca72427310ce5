//! How this lesson's hooks are built: everything `LessonHooks` holds is
//! made here, once, before the first turn. What the hooks do with it on
//! each of the loop's events is in the parent module, `hooks.rs`.

use shared::cli::Setup;

use crate::Options;
use crate::builtin_hooks;
use crate::dispatch::{ToolContext, base_tools};
use crate::hook_registry::HookRegistry;
use crate::skills;
use crate::subagent::{self, Subagent};
use crate::todo::TodoTracker;

use super::LessonHooks;

impl LessonHooks {
    /// Hooks working in the setup's workspace, with the five base tools,
    /// `todo_write`, `load_skill`, `task`, and this lesson's hooks,
    /// reporting to the setup's notices, asking `options.approver` before
    /// risky calls. Fails only when a skills directory was named that does
    /// not exist.
    pub fn new(setup: &Setup, options: Options) -> anyhow::Result<Self> {
        let mut registry = HookRegistry::new();
        builtin_hooks::register(
            &mut registry,
            setup.workspace(),
            setup.notices(),
            options.approver,
        );
        let mut tools = base_tools();
        let todos = TodoTracker::new();
        todos.register(&mut tools);
        // ANCHOR: register_skills
        // The skills: their catalog to the system prompt, `load_skill` to
        // the tools.
        let skills = skills::load(&options.skills, setup.workspace().root(), setup.notices())?;
        let skill_catalog = skills.catalog();
        skills::register_tool(&mut tools, skills);
        // ANCHOR_END: register_skills
        // ANCHOR: register_task
        // Subagents think with the parent's model, behind the parent's hooks.
        let subagent = Subagent::new(setup.model().clone(), setup.model_id().to_owned());
        subagent::register(&mut tools, subagent, registry.clone());
        // ANCHOR_END: register_task
        Ok(Self {
            tools,
            context: ToolContext::new(setup.workspace().clone(), setup.notices().clone()),
            registry,
            todos,
            skill_catalog,
        })
    }
}
