//! How this lesson's hooks are built: everything `LessonHooks` holds is
//! made here, once, before the first turn. What the hooks do with it on
//! each of the loop's events is in the parent module, `hooks.rs`.

use shared::tools::Workspace;

use super::LessonHooks;

impl LessonHooks {
    /// Hooks working in `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}
