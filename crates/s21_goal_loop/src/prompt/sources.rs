//! The sections this lesson writes from scratch, each from the state it
//! describes.
//!
//! Every function reads the state as it is now and returns a [`Section`];
//! when the state is absent (no tools, no `todo_write` tool) the section's
//! text is empty and the assembler leaves it out. The skills and memory
//! sections need no function here: their text comes ready from the skill
//! catalog and the memory layer (see `LessonHooks::prompt_sections`).
//! Nothing here may depend on the clock or on the iteration order of a
//! hash map: the same state must give the same bytes, call after call.

use shared::tools::Workspace;

use super::section::Section;
use crate::dispatch::ToolRegistry;
use crate::todo;

// ANCHOR: sources
/// Who the agent is and how it works. Always present.
pub fn identity() -> Section {
    Section::new(
        "identity",
        "You are a coding agent. Use tools to solve tasks. Act, don't explain.",
    )
}

/// Where the agent works. Always present.
pub fn workspace(workspace: &Workspace) -> Section {
    Section::new(
        "workspace",
        format!(
            "Working directory: {}. Relative paths in tool calls start here.",
            workspace.root().display()
        ),
    )
}

/// The tools the model is offered, sorted by name (and each named once) so
/// the text depends on which tools there are, not on the order they were
/// added.
pub fn tools(mut names: Vec<&str>) -> Section {
    names.sort_unstable();
    names.dedup();
    let text = if names.is_empty() {
        String::new()
    } else {
        format!("Available tools: {}.", names.join(", "))
    };
    Section::new("tools", text)
}

/// How to plan, present only while `todo_write` is registered: advice to
/// call a tool the model does not have would only produce failed calls.
pub fn planning(tools: &ToolRegistry) -> Section {
    let text = if tools.names().contains(&todo::TOOL_NAME) {
        "Before multi-step work, plan it with todo_write; then keep the list current: \
         one task in_progress at a time, each marked completed as soon as it is done."
    } else {
        ""
    };
    Section::new("planning", text)
}
// ANCHOR_END: sources
