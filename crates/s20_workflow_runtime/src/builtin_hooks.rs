//! The hooks this lesson registers: lesson 3's permission gate, moved out
//! of `run_tool` onto `PreToolUse`, plus four small examples of what hooks
//! are for — context, logging, a warning and a summary.
//!
//! Every hook emits one `[hook] …` notice (shown dim on standard error),
//! so you can watch the events fire around the model's output.

use std::path::PathBuf;

use shared::cli::describe_input;
use shared::hooks::{PromptCheck, ToolOutput};
use shared::notice::Notices;
use shared::protocol::{ContentBlock, Message, ToolUse};
use shared::text::plural;
use shared::tools::Workspace;

use crate::hook_registry::HookRegistry;
use crate::mcp::McpHub;
use crate::permission::{Approver, Decision, PermissionGate};
use crate::settings::rules::PermissionRules;

/// Outputs longer than this many characters get a warning.
///
/// The course warns above 100,000, but the base tools already cut their
/// output at [`shared::tools::MAX_OUTPUT_CHARS`] (50,000), so that warning
/// could never fire here. 20,000 characters, some 5,000 tokens, is already
/// a large share of the context for one result.
pub const LARGE_OUTPUT_CHARS: usize = 20_000;

// ANCHOR: register
/// Registers this lesson's hooks, in the order they run; they report to
/// `notices`, and the permission gate knows the MCP tools of `mcp` and
/// decides by the settings file's `rules` too (lesson 19).
pub fn register(
    registry: &mut HookRegistry,
    workspace: &Workspace,
    notices: &Notices,
    approver: Box<dyn Approver>,
    mcp: &McpHub,
    rules: PermissionRules,
) {
    registry.on_user_prompt_submit(context_hook(
        workspace.root().to_path_buf(),
        notices.clone(),
    ));
    // The permission hook comes first: when it blocks a call, the hooks
    // after it are not run, so the log shows only calls that will run.
    registry.on_pre_tool_use(permission_hook(
        PermissionGate::new(workspace.clone(), approver, mcp.clone()).with_rules(rules),
    ));
    registry.on_pre_tool_use(log_pre_tool_use(notices.clone()));
    registry.on_post_tool_use(log_post_tool_use(notices.clone()));
    registry.on_post_tool_use(large_output_hook(LARGE_OUTPUT_CHARS, notices.clone()));
    registry.on_stop(summary_hook(notices.clone()));
}

/// The tag of every notice these hooks emit.
pub const HOOK_TAG: &str = "hook";
// ANCHOR_END: register

// ANCHOR: permission
/// `PreToolUse`: lesson 3's three gates, unchanged. A denial blocks the
/// call, and its text is what the model reads.
pub fn permission_hook(gate: PermissionGate) -> impl Fn(&ToolUse) -> Option<String> + Send + Sync {
    move |call| match gate.check(call) {
        Decision::Allow => None,
        Decision::Deny(reason) => Some(reason),
    }
}
// ANCHOR_END: permission

// ANCHOR: examples
/// `UserPromptSubmit`: says where the agent is working. It returns `None`,
/// so the prompt goes through as typed; returning
/// `Some(PromptCheck::Replace(…))` would inject the text into the prompt.
pub fn context_hook(
    root: PathBuf,
    notices: Notices,
) -> impl Fn(&str) -> Option<PromptCheck> + Send + Sync {
    move |_prompt| {
        notices.emit(
            HOOK_TAG,
            format!("UserPromptSubmit: working in {}", root.display()),
        );
        None
    }
}

/// `PreToolUse`: logs each call that is about to run.
pub fn log_pre_tool_use(notices: Notices) -> impl Fn(&ToolUse) -> Option<String> + Send + Sync {
    move |call| {
        notices.emit(
            HOOK_TAG,
            format!("PreToolUse: {}({})", call.name, describe_input(call)),
        );
        None
    }
}

/// `PostToolUse`: logs how much each call returned.
pub fn log_post_tool_use(notices: Notices) -> impl Fn(&ToolUse, &ToolOutput) + Send + Sync {
    move |call, output| {
        let size = output.text.chars().count();
        let outcome = if output.is_error {
            "an error"
        } else {
            "output"
        };
        notices.emit(
            HOOK_TAG,
            format!(
                "PostToolUse: {} returned {outcome} ({size} chars)",
                call.name
            ),
        );
    }
}

/// `PostToolUse`: warns when a result is longer than `threshold` characters.
pub fn large_output_hook(
    threshold: usize,
    notices: Notices,
) -> impl Fn(&ToolUse, &ToolOutput) + Send + Sync {
    move |call, output| {
        let size = output.text.chars().count();
        if size > threshold {
            notices.emit(
                HOOK_TAG,
                format!(
                    "PostToolUse: ⚠ large output from {}: {size} chars (over {threshold})",
                    call.name
                ),
            );
        }
    }
}

/// `Stop`: counts the tool calls of the session so far. It returns
/// `None`, so the turn ends; a `Some(prompt)` would send the model back
/// to work.
pub fn summary_hook(notices: Notices) -> impl Fn(&[Message]) -> Option<String> + Send + Sync {
    move |history| {
        let calls = history
            .iter()
            .flat_map(|message| &message.content)
            .filter(|block| matches!(block, ContentBlock::ToolResult(_)))
            .count();
        notices.emit(
            HOOK_TAG,
            format!(
                "Stop: session used {}",
                plural(calls, "tool call", "tool calls")
            ),
        );
        None
    }
}
// ANCHOR_END: examples
