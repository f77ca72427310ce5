//! Skills: knowledge the agent loads only when a task needs it.
//!
//! A skill is a folder with a `SKILL.md`: YAML frontmatter (`name`,
//! `description`; without it, the folder's name and the file's first line)
//! and Markdown instructions, plus any reference files or scripts the
//! instructions point to. Skills reach the model in two steps:
//!
//! 1. **The catalog**, one line per skill (`- name: description`), in the
//!    system prompt. It is built once at start-up and sent with every
//!    request, so it stays short: a few dozen tokens per skill.
//! 2. **The skill itself**, returned by the `load_skill` tool when the
//!    model decides it needs it. It arrives as a tool result, so it costs
//!    tokens only in conversations that use it.
//!
//! The modules, in the order data flows through them:
//!
//! * [`discovery`]: which directory holds the skills (`--skills-dir`,
//!   `SKILLS_DIR`, the workspace's `skills/`, the course's `skills/`);
//! * [`frontmatter`]: splitting and checking one `SKILL.md`;
//! * [`registry`]: scanning the directory into skills by name, and the catalog;
//! * [`tool`]: the `load_skill` tool.
//!
//! The directory is scanned once. A skill added or edited while the agent
//! runs is seen after a restart: that keeps the system prompt identical
//! from request to request (which prompt caching, lesson 10, relies on),
//! and the skill the model loads matches the catalog line it chose it by.

pub mod discovery;
pub mod frontmatter;
pub mod registry;
pub mod tool;

use std::path::Path;
use std::sync::Arc;

use shared::notice::Notices;

use crate::dispatch::{ToolContext, ToolRegistry};

pub use discovery::{SkillsArgs, locate};
pub use registry::{Skill, SkillRegistry, SkillWarning};

// ANCHOR: load
/// Finds the skills directory and scans it, once. Skipped skills are
/// reported as notices, one each; only a skills directory the user named
/// but that does not exist is an error.
pub fn load(
    args: &SkillsArgs,
    workspace: &Path,
    notices: &Notices,
) -> anyhow::Result<Arc<SkillRegistry>> {
    let Some(located) = locate(args.skills_dir.as_deref(), workspace)? else {
        notices.emit(
            SKILLS_TAG,
            format!(
                "no skills directory found (no --skills-dir, no {}, no skills/ in the \
                 workspace, no course skills); the skill catalog is empty",
                discovery::SKILLS_DIR_ENV
            ),
        );
        return Ok(Arc::new(SkillRegistry::empty()));
    };
    let (registry, warnings) = SkillRegistry::scan(&located.dir);
    for warning in &warnings {
        notices.emit(SKILLS_TAG, format!("warning: {warning}"));
    }
    tracing::info!(
        dir = %registry.dir().unwrap_or(&located.dir).display(),
        origin = ?located.origin,
        skills = %registry.names(),
        "skills loaded"
    );
    Ok(Arc::new(registry))
}
// ANCHOR_END: load

// ANCHOR: register
/// Adds `load_skill` to the dispatch map. The handler shares the registry;
/// it never rescans.
pub fn register_tool(tools: &mut ToolRegistry, skills: Arc<SkillRegistry>) {
    tools.register(tool::spec(), move |input, context: ToolContext| {
        let skills = Arc::clone(&skills);
        async move { tool::call(&skills, context.workspace.root(), &input).await }
    });
}

/// The tag of the skills' notices.
pub const SKILLS_TAG: &str = "skills";
// ANCHOR_END: register
