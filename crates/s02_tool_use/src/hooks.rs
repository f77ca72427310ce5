//! What this lesson plugs into the loop.

use shared::hooks::{Hooks, ToolOutput};
use shared::protocol::{SystemBlock, ToolSpec, ToolUse};
use shared::tools::Workspace;

use crate::dispatch::{ToolRegistry, base_tools};

/// The lesson's hooks: a system prompt and a dispatch map of tools.
pub struct LessonHooks {
    workspace: Workspace,
    tools: ToolRegistry,
}

impl LessonHooks {
    /// Hooks working in `workspace`, with the five base tools.
    pub fn new(workspace: Workspace) -> Self {
        let tools = base_tools(&workspace);
        Self { workspace, tools }
    }
}

impl Hooks for LessonHooks {
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        vec![SystemBlock::text(format!(
            "You are a coding agent at {}. Use tools to solve tasks. Act, don't explain.",
            self.workspace.root().display()
        ))]
    }

    fn tools(&mut self) -> Vec<ToolSpec> {
        self.tools.specs()
    }

    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        self.tools.dispatch(call).await
    }
}
