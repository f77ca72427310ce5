//! How this lesson's hooks are built: everything `LessonHooks` holds is
//! made here, once, before the first turn. What the hooks do with it on
//! each of the loop's events is in the parent module, `hooks.rs`.

use shared::notice::Notices;
use shared::tools::Workspace;

use crate::builtin_hooks;
use crate::dispatch::{ToolContext, base_tools};
use crate::hook_registry::HookRegistry;
use crate::permission::Approver;

use super::LessonHooks;

impl LessonHooks {
    /// Hooks working in `workspace`, with the five base tools and this
    /// lesson's hooks, reporting to `notices`, asking `approver` before
    /// risky calls.
    pub fn new(workspace: Workspace, notices: Notices, approver: Box<dyn Approver>) -> Self {
        let mut registry = HookRegistry::new();
        builtin_hooks::register(&mut registry, &workspace, &notices, approver);
        Self {
            tools: base_tools(),
            context: ToolContext::new(workspace, notices),
            registry,
        }
    }
}
