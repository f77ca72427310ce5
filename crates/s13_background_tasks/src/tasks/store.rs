//! The `.tasks/` directory: one JSON file per task, written atomically and
//! read defensively.
//!
//! A file that cannot be read or parsed, or whose `id` does not match its
//! name, is skipped and reported; the rest of the board still loads. A
//! write goes through [`shared::fs::write_atomic`], so a reader in another
//! process never sees half a task.
//!
//! A skipped file is still there, and still holds its id: a person may
//! repair it. So a new task's id comes from every file name present,
//! readable or not ([`TaskStore::taken_ids`]), and a new task's file is
//! created, never replaced ([`TaskStore::create`]): if its name was taken
//! after all, by a file made by hand or by a process that ignores the
//! lock, the creation fails and the board tries the next id.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
        write_atomic(&self.path(&task.id), to_json(task)?)
    }

    /// The ids named by the files present, whether or not they can be read
    /// (dot files aside: the lock and the temporary files of writes).
    pub fn taken_ids(&self) -> io::Result<Vec<String>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if let Some(id) = name
                .strip_suffix(".json")
                .filter(|_| !name.starts_with('.'))
            {
                ids.push(id.to_string());
            }
        }
        Ok(ids)
    }

    // ANCHOR: create_new
    /// Writes `task` as a new file, atomically, and only if no file has its
    /// name: an [`io::ErrorKind::AlreadyExists`] error leaves the file
    /// there untouched. The contents go to a temporary file first, which is
    /// then hard-linked to the task's name; unlike a rename, a link never
    /// replaces an existing name, so the check and the creation are one
    /// step, across processes too.
    pub fn create(&self, task: &Task) -> io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        fs::create_dir_all(&self.dir)?;
        let temp = self.dir.join(format!(
            ".{}.json.new-{}-{}",
            task.id,
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let created = (|| {
            let mut file = fs::File::create_new(&temp)?;
            file.write_all(to_json(task)?.as_bytes())?;
            file.sync_all()?;
            fs::hard_link(&temp, self.path(&task.id))?;
            // The name is durable once the directory is.
            #[cfg(unix)]
            fs::File::open(&self.dir)?.sync_all()?;
            Ok(())
        })();
        // Best effort: the task's file, if linked, no longer needs it.
        let _ = fs::remove_file(&temp);
        created
    }
    // ANCHOR_END: create_new
}

/// A task as its file holds it: pretty JSON and a final newline.
fn to_json(task: &Task) -> io::Result<String> {
    let mut json = serde_json::to_string_pretty(task).map_err(io::Error::other)?;
    json.push('\n');
    Ok(json)
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

/// The id after the largest numeric id in `ids`.
pub fn next_id<S: AsRef<str>>(ids: &[S]) -> String {
    let last = ids
        .iter()
        .filter_map(|id| id.as_ref().parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    (last + 1).to_string()
}
