//! What this lesson plugs into the loop.

use shared::hooks::{Hooks, ToolOutput};
use shared::protocol::{SystemBlock, ToolSpec, ToolUse};
use shared::tools::Workspace;

use crate::dispatch::{ToolRegistry, base_tools};
use crate::permission::{Approver, Decision, PermissionGate};

/// The lesson's hooks: a system prompt, a dispatch map of tools and the
/// permission gate in front of it.
pub struct LessonHooks {
    workspace: Workspace,
    tools: ToolRegistry,
    permission: PermissionGate,
}

impl LessonHooks {
    /// Hooks working in `workspace`, with the five base tools, asking
    /// `approver` before risky calls.
    pub fn new(workspace: Workspace, approver: Box<dyn Approver>) -> Self {
        let tools = base_tools(&workspace);
        let permission = PermissionGate::new(workspace.clone(), approver);
        Self {
            workspace,
            tools,
            permission,
        }
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

    // ANCHOR: run_tool
    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        if let Decision::Deny(reason) = self.permission.check(call) {
            return ToolOutput::error(reason);
        }
        self.tools.dispatch(call).await
    }
    // ANCHOR_END: run_tool
}
