//! The `.tasks/` directory: one JSON file per task, written atomically and
//! read defensively.
//!
//! A file that cannot be read or parsed, or whose `id` does not match its
//! name, is skipped and reported; the rest of the board still loads. A
//! write goes through [`shared::fs::write_atomic`], so a reader in another
//! process never sees half a task.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use shared::fs::write_atomic;

use super::task::{Task, validate_id};

/// The board's directory, relative to the workspace.
pub const TASKS_DIR: &str = ".tasks";

/// A task file that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub file: String,
    pub reason: String,
}

/// The task files of one board.
#[derive(Debug, Clone)]
pub struct TaskStore {
    dir: PathBuf,
}

impl TaskStore {
    /// The store in `dir` (created on the first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The board's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The task with `id`: `Ok(None)` if there is no such file, an error
    /// naming the problem if there is one but it is unreadable.
    pub fn load(&self, id: &str) -> Result<Option<Task>, Skipped> {
        let file = format!("{id}.json");
        let text = match fs::read_to_string(self.path(id)) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(Skipped {
                    file,
                    reason: error.to_string(),
                });
            }
        };
        parse(&file, id, &text).map(Some)
    }

    /// Every readable task, in id order (numbers by value), and every file
    /// that was skipped.
    pub fn scan(&self) -> (Vec<Task>, Vec<Skipped>) {
        let mut tasks = Vec::new();
        let mut skipped = Vec::new();
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return (tasks, skipped);
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Dot files are the lock and temporary files of atomic writes.
            let Some(id) = name
                .strip_suffix(".json")
                .filter(|_| !name.starts_with('.'))
            else {
                continue;
            };
            if validate_id(id).is_err() {
                skipped.push(Skipped {
                    file: name.clone(),
                    reason: "its name is not a task id".to_string(),
                });
                continue;
            }
            match self.load(id) {
                Ok(Some(task)) => tasks.push(task),
                Ok(None) => {}
                Err(problem) => skipped.push(problem),
            }
        }
        tasks.sort_by(|a, b| id_order(&a.id).cmp(&id_order(&b.id)));
        skipped.sort_by(|a, b| a.file.cmp(&b.file));
        (tasks, skipped)
    }

    /// Writes `task` to its file, atomically.
    pub fn save(&self, task: &Task) -> io::Result<()> {
        let mut json = serde_json::to_string_pretty(task).map_err(io::Error::other)?;
        json.push('\n');
        write_atomic(&self.path(&task.id), json)
    }
}

/// Reads one task file, checking that it describes the task it is named
/// after (a copied file with a stale id would otherwise shadow another).
fn parse(file: &str, id: &str, text: &str) -> Result<Task, Skipped> {
    let problem = |reason: String| Skipped {
        file: file.to_string(),
        reason,
    };
    let task: Task = serde_json::from_str(text).map_err(|error| problem(error.to_string()))?;
    if task.id != id {
        return Err(problem(format!("it says its id is `{}`", task.id)));
    }
    if let Some(bad) = task.blocked_by.iter().find(|dep| validate_id(dep).is_err()) {
        return Err(problem(format!("`{bad}` in blockedBy is not a task id")));
    }
    Ok(task)
}

/// Sorts numeric ids by value (2 before 10), then any others by name.
fn id_order(id: &str) -> (u64, &str) {
    (id.parse().unwrap_or(u64::MAX), id)
}

/// The id after the largest numeric id in `tasks`.
pub fn next_id(tasks: &[Task]) -> String {
    let last = tasks
        .iter()
        .filter_map(|task| task.id.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    (last + 1).to_string()
}
