//! The manager's own files in `.worktrees/`: the bindings, the lock, and
//! the `.gitignore` that hides it all from the main checkout.
//!
//! ```text
//! .worktrees/
//!   .gitignore      `*`: nothing in here is part of the project
//!   .lock           held while a worktree is created, removed or kept
//!   bindings.json   which task each worktree works on, and which are kept
//!   events.jsonl    what happened, one JSON line per event (see events.rs)
//!   auth/           a worktree, on the branch wt/auth
//! ```
//!
//! The bindings live here rather than in the task files so that they
//! survive a restart and can be read without the task board: a teammate
//! that claims task 3 asks "which worktree is bound to 3?" and gets a path.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The bindings file, in `.worktrees/`.
pub const BINDINGS_FILE: &str = "bindings.json";

/// Where a bindings file that could not be read is set aside, so that the
/// next write does not destroy what a person might still recover from it.
pub const CORRUPT_BINDINGS_FILE: &str = "bindings.json.corrupt";

const LOCK_FILE: &str = ".lock";
const GITIGNORE_FILE: &str = ".gitignore";

/// What the manager remembers about one worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The task it was created for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Kept for review: its branch is waiting for a person to look at it.
    #[serde(default)]
    pub kept: bool,
}

/// Worktree name → record. A `BTreeMap`, so the file is written in name
/// order and a diff of two versions is readable.
pub(crate) type Records = BTreeMap<String, Record>;

/// Reads the bindings. A missing file means none yet. A file that cannot
/// be read or parsed yields no bindings and a description of the problem,
/// never a panic: losing the bindings is bad, but refusing to work with
/// worktrees at all because of them would be worse.
pub(crate) fn load(dir: &Path) -> (Records, Option<String>) {
    let path = dir.join(BINDINGS_FILE);
    let problem = |reason: String| {
        format!(
            ".worktrees/{BINDINGS_FILE} could not be read ({reason}); worktrees are shown without their tasks, and the next create, remove or keep sets the file aside as .worktrees/{CORRUPT_BINDINGS_FILE} and starts a new one"
        )
    };
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return (Records::new(), None),
        Err(error) => return (Records::new(), Some(problem(error.to_string()))),
    };
    match serde_json::from_str(&text) {
        Ok(records) => (records, None),
        Err(error) => (Records::new(), Some(problem(error.to_string()))),
    }
}

/// Writes the bindings, first setting aside a file that [`load`] could not
/// read. The caller holds the lock.
pub(crate) fn save(dir: &Path, records: &Records) -> io::Result<()> {
    let path = dir.join(BINDINGS_FILE);
    if load(dir).1.is_some() {
        fs::rename(&path, dir.join(CORRUPT_BINDINGS_FILE))?;
    }
    let mut json = serde_json::to_string_pretty(records).map_err(io::Error::other)?;
    json.push('\n');
    shared::fs::write_atomic(&path, json.as_bytes())
}

/// Creates `.worktrees/` and its `.gitignore`.
///
/// The worktrees live inside the main checkout, so without the
/// `.gitignore` the main checkout's `git status` would list `.worktrees/`
/// as untracked, the model would see noise in every status, and a careless
/// `git add -A` would try to commit other checkouts. A `*` in a
/// `.gitignore` inside the directory ignores everything in it, itself
/// included, without touching the project's own `.gitignore`.
pub(crate) fn ensure_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let gitignore = dir.join(GITIGNORE_FILE);
    if !gitignore.exists() {
        shared::fs::write_atomic(
            &gitignore,
            b"# Worktrees and their bookkeeping, made by the agent: not part of the project.\n*\n",
        )?;
    }
    Ok(())
}

// ANCHOR: lock
/// Holds `.worktrees/.lock` until dropped.
///
/// Creating a worktree is "check the name is free, run git, record the
/// binding, log the event". Git locks its own files, but not that whole
/// sequence: two creators could both find a name free, or both read the
/// bindings and each write back a version without the other's binding.
/// The lock makes the sequence one step. It is the operating system's file
/// lock, taken on a file opened for this purpose, so it holds between
/// threads (each opens its own file) and between processes (another agent
/// session in the same workspace), and is released if its holder dies.
#[derive(Debug)]
pub(crate) struct DirLock {
    // Closing the file releases the lock.
    _file: File,
}

impl DirLock {
    /// Waits for the lock of `dir` and takes it.
    pub(crate) fn acquire(dir: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE))?;
        file.lock()?;
        Ok(Self { _file: file })
    }
}
// ANCHOR_END: lock
// ANCHOR_END: write_atomic
