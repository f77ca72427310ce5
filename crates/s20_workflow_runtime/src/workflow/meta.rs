//! What a workflow says about itself, and the checks it must pass before
//! it may run.
//!
//! A workflow's name becomes part of file names under `.runtime/` and of
//! the run ids the model passes back to resume, so it must be a short,
//! safe slug; its description and phases are what the terminal and the
//! tool's description show. A workflow whose metadata fails these checks
//! is refused before any of its code runs, with a [`WorkflowInputError`]
//! that says which check failed, the same way lesson 14 refuses a bad cron
//! expression when it is scheduled rather than when it would fire.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The longest workflow name accepted.
pub const MAX_NAME_CHARS: usize = 64;

// ANCHOR: meta
/// A registered workflow's name, description and phases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowMeta {
    /// A slug of 1 to 64 letters, digits, `.`, `_` or `-`.
    pub name: String,
    /// One line for the tool's description and the terminal.
    pub description: String,
    /// The phases its progress moves through, in order (may be empty).
    #[serde(default)]
    pub phases: Vec<String>,
}

/// Why a `Workflow` call was refused before anything started. The text is
/// what the model reads in its `is_error` result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowInputError {
    #[error(
        "workflow name {0:?} is not a safe slug: use 1 to {MAX_NAME_CHARS} letters, digits, `.`, `_` or `-`"
    )]
    BadName(String),
    #[error("workflow {0} has an empty description")]
    EmptyDescription(String),
    #[error("workflow {name}: phase {index} is empty; phases must be non-empty strings")]
    EmptyPhase { name: String, index: usize },
    #[error("unknown workflow {name:?}; registered workflows: {known}")]
    Unknown { name: String, known: String },
    /// A script was sent under the name of a registered workflow.
    #[error(
        "{0} is the name of a registered workflow; give the script a name of its own, or leave \
         the script out to run the registered one"
    )]
    Taken(String),
    /// A script the model sent does not parse.
    #[error(transparent)]
    Script(super::limits::ScriptError),
    /// `resume_from_run_id` is not a name a run could have.
    #[error(
        "resume_from_run_id {0:?} is not a run id (a run id is a file-safe name such as wf-review-changes-…)"
    )]
    NotARunId(String),
    /// No snapshot of that run in `dir`.
    #[error(
        "no workflow run {run_id} in {dir}/ to resume; start a new run without resume_from_run_id"
    )]
    NoSuchRun { run_id: String, dir: &'static str },
    /// The run's snapshot exists but cannot be read (the I/O error's text).
    #[error("cannot read {}: {reason}", .path.display())]
    UnreadableSnapshot { path: PathBuf, reason: String },
    /// The run's snapshot is not valid JSON for a snapshot (serde's reason).
    #[error("the snapshot {} is damaged: {reason}", .path.display())]
    DamagedSnapshot { path: PathBuf, reason: String },
    /// The run exists, but is a run of another workflow.
    #[error("run {run_id} is a run of {found}, not of {wanted}")]
    OtherWorkflow {
        run_id: String,
        found: String,
        wanted: String,
    },
    /// The run is going on in this session.
    #[error("run {0} is still running; wait for its notification")]
    StillRunning(String),
    /// Another session holds the run's lock (see [`super::lock`]).
    #[error("run {0} is already running in another session; resume it once that run has ended")]
    RunningElsewhere(String),
    #[error("{0}")]
    Storage(String),
}

impl WorkflowMeta {
    /// Metadata with these fields.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        phases: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            phases: phases.into_iter().map(Into::into).collect(),
        }
    }

    /// Checks the three rules: a safe name, a description, no empty phase.
    pub fn validate(&self) -> Result<(), WorkflowInputError> {
        if !is_safe_name(&self.name, MAX_NAME_CHARS) {
            return Err(WorkflowInputError::BadName(self.name.clone()));
        }
        if self.description.trim().is_empty() {
            return Err(WorkflowInputError::EmptyDescription(self.name.clone()));
        }
        if let Some(index) = self.phases.iter().position(|phase| phase.trim().is_empty()) {
            return Err(WorkflowInputError::EmptyPhase {
                name: self.name.clone(),
                index,
            });
        }
        Ok(())
    }
}
// ANCHOR_END: meta

/// Whether `text` is 1 to `max_chars` characters, each a letter or digit
/// of ASCII, `.`, `_` or `-`: safe inside a file name on every system.
pub fn is_safe_name(text: &str, max_chars: usize) -> bool {
    (1..=max_chars).contains(&text.len())
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_slugs_of_at_most_64_characters() {
        for good in ["review-changes", "a", "v1.2_x", &"n".repeat(64)] {
            assert!(is_safe_name(good, MAX_NAME_CHARS), "{good}");
        }
        for bad in ["", "has space", "../up", "a/b", "é", &"n".repeat(65)] {
            assert!(!is_safe_name(bad, MAX_NAME_CHARS), "{bad}");
        }
    }

    #[test]
    fn each_rule_has_its_own_error() {
        let ok = WorkflowMeta::new("w", "does things", ["One", "Two"]);
        assert_eq!(ok.validate(), Ok(()));
        let bad_name = WorkflowMeta {
            name: "no good".into(),
            ..ok.clone()
        };
        assert!(matches!(
            bad_name.validate(),
            Err(WorkflowInputError::BadName(_))
        ));
        let no_description = WorkflowMeta {
            description: "  ".into(),
            ..ok.clone()
        };
        assert!(matches!(
            no_description.validate(),
            Err(WorkflowInputError::EmptyDescription(_))
        ));
        let empty_phase = WorkflowMeta::new("w", "d", ["One", ""]);
        assert_eq!(
            empty_phase.validate(),
            Err(WorkflowInputError::EmptyPhase {
                name: "w".into(),
                index: 1
            })
        );
    }
}
