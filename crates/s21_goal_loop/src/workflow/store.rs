//! Where a run's files live: `.runtime/` in the workspace, four files
//! per run, all named by its run id.
//!
//! * `<runId>.json`, the snapshot: which workflow with which arguments,
//!   its status and its counts. Resuming reads the workflow and arguments
//!   from here.
//! * `<runId>.journal.jsonl`, the journal (see [`super::journal`]).
//! * `<runId>.output.json`, what the workflow returned, once it has.
//! * `<runId>.lock`, locked by the session running the run (see
//!   [`super::lock`]); empty, and never deleted.
//!
//! The snapshot and the output are replaced whole with
//! [`shared::fs::write_atomic`], so a reader sees the old file or the new
//! one. A run id comes back from the model on resume, so it is checked
//! before it is used in a path: a safe name, and a run that exists.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::{WorkflowInputError, is_safe_name};

/// The directory of the run files, under the workspace.
pub const RUNTIME_DIR: &str = ".runtime";

/// The longest run id accepted.
pub const MAX_RUN_ID_CHARS: usize = 128;

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Completed,
    Failed,
    Stopped,
}

impl RunStatus {
    /// The word the snapshot and the notification use.
    pub fn word(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
}

// ANCHOR: snapshot
/// A run's snapshot: enough to resume it and to report on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub run_id: String,
    pub workflow: String,
    pub args: Value,
    pub status: RunStatus,
    #[serde(default)]
    pub phase: Option<String>,
    /// Agent calls that ran in this attempt (not taken from the journal).
    pub agents_run: usize,
    /// Agent calls answered from the journal.
    pub agents_cached: usize,
    /// Tokens this attempt's agents used.
    pub tokens: u64,
    /// Tool calls this attempt's agents made.
    pub tool_calls: usize,
    pub elapsed_ms: u64,
    /// The output file, relative to the workspace, once there is one.
    #[serde(default)]
    pub output_file: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}
// ANCHOR_END: snapshot

/// The run files of one workspace.
#[derive(Debug, Clone)]
pub struct RunStore {
    root: PathBuf,
}

impl RunStore {
    /// The run files under `workspace/.runtime/`.
    pub fn new(workspace: &Path) -> Self {
        Self {
            root: workspace.to_path_buf(),
        }
    }

    /// `.runtime/<runId>.json`.
    pub fn snapshot_path(&self, run_id: &str) -> PathBuf {
        self.dir().join(format!("{run_id}.json"))
    }

    /// `.runtime/<runId>.journal.jsonl`.
    pub fn journal_path(&self, run_id: &str) -> PathBuf {
        self.dir().join(format!("{run_id}.journal.jsonl"))
    }

    /// `.runtime/<runId>.script.js`: the script a model sent, kept for a
    /// resume.
    pub fn script_path(&self, run_id: &str) -> PathBuf {
        self.dir().join(format!("{run_id}.script.js"))
    }

    /// Keeps the script of a run, for a resume that does not send it again.
    pub fn write_script(&self, run_id: &str, source: &str) -> std::io::Result<()> {
        shared::fs::write_atomic(&self.script_path(run_id), source)
    }

    /// `.runtime/<runId>.lock`.
    pub fn lock_path(&self, run_id: &str) -> PathBuf {
        self.dir().join(format!("{run_id}.lock"))
    }

    /// The output file as the notification names it, relative to the
    /// workspace.
    pub fn output_name(run_id: &str) -> String {
        format!("{RUNTIME_DIR}/{run_id}.output.json")
    }

    /// `.runtime/<runId>.output.json`.
    pub fn output_path(&self, run_id: &str) -> PathBuf {
        self.root.join(Self::output_name(run_id))
    }

    fn dir(&self) -> PathBuf {
        self.root.join(RUNTIME_DIR)
    }

    /// Replaces the run's snapshot.
    pub fn write_snapshot(&self, snapshot: &Snapshot) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(snapshot).map_err(std::io::Error::other)?;
        shared::fs::write_atomic(&self.snapshot_path(&snapshot.run_id), text + "\n")
    }

    /// Replaces the run's output with `output`, pretty-printed: the same
    /// value gives the same bytes.
    pub fn write_output(&self, run_id: &str, output: &Value) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(output).map_err(std::io::Error::other)?;
        shared::fs::write_atomic(&self.output_path(run_id), text + "\n")
    }

    // ANCHOR: resume_id
    /// The snapshot of the run `run_id` names, for a resume: refused when
    /// the id is not a safe name, when there is no such run, or when its
    /// snapshot cannot be read.
    pub fn load_for_resume(&self, run_id: &str) -> Result<Snapshot, WorkflowInputError> {
        if !is_safe_name(run_id, MAX_RUN_ID_CHARS) || run_id.starts_with('.') {
            return Err(WorkflowInputError::NotARunId(run_id.to_string()));
        }
        let path = self.snapshot_path(run_id);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(WorkflowInputError::NoSuchRun {
                    run_id: run_id.to_string(),
                    dir: RUNTIME_DIR,
                });
            }
            Err(error) => {
                return Err(WorkflowInputError::UnreadableSnapshot {
                    path,
                    reason: error.to_string(),
                });
            }
        };
        serde_json::from_str(&text).map_err(|error| WorkflowInputError::DamagedSnapshot {
            path,
            reason: error.to_string(),
        })
    }
    // ANCHOR_END: resume_id
}

/// A new run id for workflow `name`: `wf-<name>-<time><pid><n>`, unique per
/// process and start, and safe in a file name because `name` is.
pub fn new_run_id(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis());
    format!(
        "wf-{name}-{millis:x}-{:x}{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_id_must_be_safe_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        assert!(store.load_for_resume("../etc/passwd").is_err());
        assert!(store.load_for_resume(".hidden").is_err());
        let missing = store.load_for_resume("wf-x-1").unwrap_err().to_string();
        assert!(missing.contains("no workflow run"), "{missing}");
        let snapshot = Snapshot {
            run_id: "wf-x-1".into(),
            workflow: "x".into(),
            args: Value::Null,
            status: RunStatus::Failed,
            phase: None,
            agents_run: 1,
            agents_cached: 0,
            tokens: 3,
            tool_calls: 0,
            elapsed_ms: 5,
            output_file: None,
            error: Some("boom".into()),
        };
        store.write_snapshot(&snapshot).unwrap();
        assert_eq!(store.load_for_resume("wf-x-1").unwrap(), snapshot);
        std::fs::write(store.snapshot_path("wf-x-1"), "{").unwrap();
        assert!(
            store
                .load_for_resume("wf-x-1")
                .unwrap_err()
                .to_string()
                .contains("damaged")
        );
    }

    #[test]
    fn run_ids_are_safe_and_distinct() {
        let (a, b) = (new_run_id("w"), new_run_id("w"));
        assert_ne!(a, b);
        assert!(is_safe_name(&a, MAX_RUN_ID_CHARS));
    }
}
