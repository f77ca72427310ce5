//! What this lesson plugs into the loop: the state `LessonHooks` holds,
//! and what it does on each of the loop's events. How that state is built
//! is in the child module, `hooks/wiring.rs`, so that what is built and
//! what happens on each event are read apart.

mod wiring;

use shared::hooks::{Hooks, ToolOutput};
use shared::protocol::{SystemBlock, ToolSpec, ToolUse};

use crate::dispatch::{ToolContext, ToolRegistry};
use crate::permission::{Decision, PermissionGate};

/// The lesson's hooks: a system prompt, a dispatch map of tools and the
/// permission gate in front of it.
pub struct LessonHooks {
    tools: ToolRegistry,
    /// The context every tool call gets.
    context: ToolContext,
    permission: PermissionGate,
}

impl LessonHooks {
    /// The dispatch map, to add or remove tools between calls.
    pub fn tool_registry(&mut self) -> &mut ToolRegistry {
        &mut self.tools
    }
}

impl Hooks for LessonHooks {
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        vec![SystemBlock::text(format!(
            "You are a coding agent at {}. Use tools to solve tasks. Act, don't explain.",
            self.context.workspace.root().display()
        ))]
    }

    fn tools(&mut self) -> Vec<ToolSpec> {
        self.tools.specs()
    }

    // ANCHOR: run_tool
    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        if let Decision::Deny(reason) = self.permission.check(call) {
            return ToolOutput::error(reason);
        }
        self.tools.dispatch(call, &self.context).await
    }
    // ANCHOR_END: run_tool
}
