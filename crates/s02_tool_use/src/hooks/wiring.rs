//! How this lesson's hooks are built: everything `LessonHooks` holds is
//! made here, once, before the first turn. What the hooks do with it on
//! each of the loop's events is in the parent module, `hooks.rs`.

use shared::notice::Notices;
use shared::tools::Workspace;

use crate::dispatch::{ToolContext, base_tools};

use super::LessonHooks;

impl LessonHooks {
    /// Hooks working in `workspace`, with the five base tools, reporting to
    /// `notices`.
    pub fn new(workspace: Workspace, notices: Notices) -> Self {
        Self {
            tools: base_tools(),
            context: ToolContext::new(workspace, notices),
        }
    }
}
