//! The board's lock: one file, `.tasks/.lock`, locked exclusively with the
//! operating system's file lock for every read-check-write.
//!
//! Claiming a task is "read it, check it is still pending and unblocked,
//! write it back with an owner". Two claimers that both read before either
//! writes would both win. A mutex would stop two threads of one process,
//! but lesson 16 runs claimers as separate agents and the user may run two
//! sessions in one workspace, so the lock must hold across processes too.
//! `File::lock` (an `flock` on Unix, `LockFileEx` on Windows) does both:
//! each lock is taken on its own open file, so two threads conflict just as
//! two processes do, and the system releases it if its holder dies.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

/// The lock file, inside the board's directory.
pub const LOCK_FILE: &str = ".lock";

// ANCHOR: lock
/// Holds the board's lock until dropped.
#[derive(Debug)]
pub struct BoardLock {
    // Closing the file releases the lock.
    _file: File,
}

impl BoardLock {
    /// Waits for the lock of the board in `dir` and takes it. This blocks
    /// the thread: async callers run it on a blocking thread.
    pub fn acquire(dir: &Path) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
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
