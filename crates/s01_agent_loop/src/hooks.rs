//! What this lesson plugs into the loop: the state `LessonHooks` holds,
//! and what it does on each of the loop's events. How that state is built
//! is in the child module, `hooks/wiring.rs`, so that what is built and
//! what happens on each event are read apart.

mod wiring;

use shared::hooks::{Hooks, ToolOutput};
use shared::protocol::{SystemBlock, ToolSpec, ToolUse};
use shared::tools::{Workspace, bash};

/// The lesson's hooks: a system prompt and the `bash` tool.
#[derive(Debug, Clone)]
pub struct LessonHooks {
    workspace: Workspace,
}

impl Hooks for LessonHooks {
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        vec![SystemBlock::text(format!(
            "You are a coding agent at {}. Use bash to solve tasks. Act, don't explain.",
            self.workspace.root().display()
        ))]
    }

    fn tools(&mut self) -> Vec<ToolSpec> {
        vec![bash::spec()]
    }

    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        match call.name.as_str() {
            "bash" => bash::call(&self.workspace, &call.input).await,
            other => ToolOutput::error(format!("Unknown tool: {other}. The only tool is bash.")),
        }
    }
}
