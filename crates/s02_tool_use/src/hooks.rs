//! What this lesson plugs into the loop: the state `LessonHooks` holds,
//! and what it does on each of the loop's events. How that state is built
//! is in the child module, `hooks/wiring.rs`, so that what is built and
//! what happens on each event are read apart.

mod wiring;

use shared::hooks::{Hooks, ToolOutput};
use shared::protocol::{SystemBlock, ToolSpec, ToolUse};

use crate::dispatch::{ToolContext, ToolRegistry};

/// The lesson's hooks: a system prompt and a dispatch map of tools.
pub struct LessonHooks {
    tools: ToolRegistry,
    /// The context every tool call gets.
    context: ToolContext,
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

    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        self.tools.dispatch(call, &self.context).await
    }
}
