//! Durable jobs on disk.
//!
//! Jobs marked `durable` are kept in a file named [`FILE_NAME`] as a JSON
//! array of [`CronJob`] objects, so that they survive a restart of the
//! agent. Two properties matter more than anything else here:
//!
//! - **Loading never fails as a whole.** A file that someone edited by hand
//!   may hold one bad entry among good ones; losing every job because of
//!   one typo would be worse than skipping the typo. So [`load`] returns the
//!   jobs it could read *and* a list of problems to show the user.
//! - **Saving never leaves a half-written file.** [`save`] writes a
//!   temporary file next to the real one and renames it over the real one.
//!   A rename within a directory is atomic, so a crash leaves either the
//!   old file or the new one, never a mixture.
//!
//! Two sessions may share a workspace, and so this file. Neither may save
//! the jobs it holds in memory over the file, or the last one to save would
//! erase the other's. Every change is a read-modify-write instead, under
//! the file lock taken by [`StoreLock::acquire`] (the task board's kind of
//! lock, lesson 12): read the file, add or remove one job, write it back.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::job::CronJob;

/// The name of the file that holds durable jobs (fixed by the course).
pub const FILE_NAME: &str = ".scheduled_tasks.json";

/// The lock file beside it.
pub const LOCK_FILE_NAME: &str = ".scheduled_tasks.json.lock";

// ANCHOR: lock
/// Holds the durable jobs file's lock until dropped: an exclusive
/// `File::lock` on [`LOCK_FILE_NAME`], which holds between threads and
/// between processes, and which the system releases if its holder dies.
#[derive(Debug)]
pub struct StoreLock {
    // Closing the file releases the lock.
    _file: File,
}

impl StoreLock {
    /// Waits for the lock of the jobs file at `path`, and takes it. It is
    /// held only for one read-modify-write, a few milliseconds.
    pub fn acquire(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path(path))?;
        file.lock()?;
        Ok(Self { _file: file })
    }
}

/// The lock file for the jobs file at `path`.
fn lock_path(path: &Path) -> PathBuf {
    path.with_file_name(LOCK_FILE_NAME)
}
// ANCHOR_END: lock

/// Reads durable jobs from `path`.
///
/// Returns the jobs that could be read and a description of every problem
/// met along the way:
///
/// - a missing file is simply no jobs and no problem (nothing was saved yet);
/// - a file that cannot be read, or is not a JSON array, is one problem and
///   no jobs;
/// - an entry that is not a valid job (a missing field, a wrong type), whose
///   cron expression does not parse, or whose id repeats an earlier entry's,
///   is one problem naming the entry, and is skipped; the others still load.
pub fn load(path: &Path) -> (Vec<CronJob>, Vec<String>) {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(err) => {
            return (
                Vec::new(),
                vec![format!("cannot read {}: {err}", path.display())],
            );
        }
    };
    // Reading the array as loose JSON values first lets one bad entry fail
    // on its own instead of failing the whole array.
    let entries: Vec<Value> = match serde_json::from_str(&text) {
        Ok(entries) => entries,
        Err(err) => {
            let problem = format!("{} is not a JSON array of jobs: {err}", path.display());
            return (Vec::new(), vec![problem]);
        }
    };

    let mut jobs = Vec::new();
    let mut problems = Vec::new();
    let mut seen_ids = HashSet::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let name = entry_name(index, &entry);
        let job: CronJob = match serde_json::from_value(entry) {
            Ok(job) => job,
            Err(err) => {
                problems.push(format!("{name}: skipped, not a valid job: {err}"));
                continue;
            }
        };
        if let Err(err) = job.expr() {
            problems.push(format!("{name}: skipped, bad cron \"{}\": {err}", job.cron));
            continue;
        }
        if !seen_ids.insert(job.id.clone()) {
            problems.push(format!(
                "{name}: skipped, its id repeats an earlier entry's"
            ));
            continue;
        }
        jobs.push(job);
    }
    (jobs, problems)
}

/// Writes `jobs` to `path` as a JSON array, atomically (see the module docs).
///
/// # Errors
///
/// Returns the I/O error if the file cannot be written; the previous file,
/// if any, is then left as it was.
pub fn save(path: &Path, jobs: &[CronJob]) -> io::Result<()> {
    let mut json = serde_json::to_vec_pretty(jobs).map_err(io::Error::other)?;
    json.push(b'\n');
    // The harness's one way of writing its files: see `shared::fs`.
    shared::fs::write_atomic(path, &json)
}

/// How a problem message refers to entry number `index` (counting from 1,
/// as people do), with its id when it has a readable one.
fn entry_name(index: usize, entry: &Value) -> String {
    match entry.get("id").and_then(Value::as_str) {
        Some(id) => format!("entry {} (id \"{id}\")", index + 1),
        None => format!("entry {}", index + 1),
    }
}
