//! Saved scripts: `.workflows/<name>.js` in the workspace, started by name
//! like a Rust workflow.
//!
//! They are read once, when the agent is built, and registered beside the
//! Rust workflows, so the `Workflow` tool's description — which lists
//! them — stays the same for the whole session and the request prefix
//! stays cacheable; a script saved later is seen by the next session. A
//! file's leading `//` comment lines describe it: the first is its
//! description, and a line `// phases: Review, Verify` names its phases.
//! A file that cannot be read, whose name is not a safe slug, that does
//! not parse, or that has the name of a Rust workflow is reported in a
//! notice and left out; one bad file never stops the others.
//!
//! A saved script runs without the question a script the model sends
//! gets: it is trusted like the settings file. That is why a model's
//! write under `.workflows/` asks first (see [`crate::permission`]).

use std::path::Path;
use std::sync::Arc;

use shared::notice::Notices;

use super::TAG;
use super::limits::ScriptError;
use super::meta::{MAX_NAME_CHARS, WorkflowMeta, is_safe_name};
use super::registry::{WorkflowFn, WorkflowRegistry};
use super::script;

/// Where saved scripts live, relative to the workspace.
pub const SCRIPTS_DIR: &str = ".workflows";

// ANCHOR: load
/// Registers every `.workflows/*.js` under `workspace` in `registry`, in
/// name order; returns the names registered.
pub fn load(workspace: &Path, registry: &mut WorkflowRegistry, notices: &Notices) -> Vec<String> {
    let dir = workspace.join(SCRIPTS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "js"))
        .collect();
    paths.sort();
    let mut loaded = Vec::new();
    for path in paths {
        match read(&path) {
            Ok((meta, source)) => {
                let name = meta.name.clone();
                if registry.register_script(meta, Arc::clone(&source), runner(source)) {
                    loaded.push(name);
                } else {
                    notices.emit(
                        TAG,
                        format!(
                            "{}: a Rust workflow is called {name} already; the script is not loaded",
                            path.display()
                        ),
                    );
                }
            }
            Err(why) => notices.emit(
                TAG,
                format!("{}: {why}; the script is not loaded", path.display()),
            ),
        }
    }
    loaded
}
// ANCHOR_END: load

/// The workflow function that runs `source`.
pub fn runner(source: Arc<str>) -> WorkflowFn {
    Arc::new(move |ctx, args| {
        let source = Arc::clone(&source);
        let limits = ctx.script_limits();
        Box::pin(script::run(ctx, source, args, limits))
    })
}

/// Why a saved script is left out.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error(
        "{0:?} is not a safe workflow name (1 to {MAX_NAME_CHARS} letters, digits, `.`, `_` or `-`)"
    )]
    BadName(String),
    #[error("cannot read it: {0}")]
    Unreadable(#[from] std::io::Error),
    #[error(transparent)]
    Script(#[from] ScriptError),
}

/// One saved script's metadata and source, or why it cannot be used.
fn read(path: &Path) -> Result<(WorkflowMeta, Arc<str>), SavedError> {
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !is_safe_name(&name, MAX_NAME_CHARS) {
        return Err(SavedError::BadName(name));
    }
    let source = std::fs::read_to_string(path)?;
    script::check_syntax(&source)?;
    Ok((header(&name, &source), Arc::from(source)))
}

/// The metadata a script's leading comment lines give.
pub fn header(name: &str, source: &str) -> WorkflowMeta {
    let mut description = String::new();
    let mut phases = Vec::new();
    for line in source.lines() {
        let Some(comment) = line.trim().strip_prefix("//") else {
            break;
        };
        let comment = comment.trim();
        if let Some(list) = comment.strip_prefix("phases:") {
            phases = list
                .split(',')
                .map(|phase| phase.trim().to_string())
                .collect();
        } else if description.is_empty() {
            description = comment.to_string();
        }
    }
    WorkflowMeta::new(name, description, phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_comments_give_description_and_phases() {
        let meta = header(
            "review",
            "// Review the changes.\n// phases: Review, Verify\nreturn 1\n// not this\n",
        );
        assert_eq!(meta.description, "Review the changes.");
        assert_eq!(meta.phases, ["Review", "Verify"]);
        assert_eq!(header("x", "return 1").description, "");
    }
}
