//! The run lock: one session at a time runs a given run.
//!
//! The `running` map of [`super::runtime`] stops one session from starting
//! a run twice, but two sessions on one workspace — two terminals, or a
//! `-p` run next to a REPL — each have their own map. Without more, both
//! could resume the same run and both would append to its journal, paying
//! twice for every call and racing on its snapshot.
//!
//! So whoever runs a run, from its first start to its end, holds an
//! exclusive lock on `.runtime/<runId>.lock`, taken with
//! [`std::fs::File::try_lock`]: a second taker is refused at once instead
//! of waiting behind a run that may take an hour. The lock belongs to the
//! open file, so the operating system lets it go when the process dies,
//! even by `SIGKILL`: a run killed half-way can be resumed straight away,
//! with no stale lock to clean up. The file itself is never deleted: a
//! process that removed it while another had it open would let a third
//! lock a new file of the same name, and two would run again.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

/// Why a run's lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another session holds it: the run is going there.
    #[error("run {0} is already running in another session; resume it once that run has ended")]
    Held(String),
    /// The lock file could not be opened or locked.
    #[error("cannot lock run {run_id}: {error}")]
    Io {
        run_id: String,
        error: std::io::Error,
    },
}

// ANCHOR: lock
/// The lock on one run, held while this value lives.
#[derive(Debug)]
pub struct RunLock {
    /// Held open: closing the file releases the lock.
    _file: File,
}

impl RunLock {
    /// Takes the lock at `path` for the run `run_id`, or says who has it.
    /// Never waits.
    pub fn try_take(path: &Path, run_id: &str) -> Result<Self, LockError> {
        let io = |error| LockError::Io {
            run_id: run_id.to_string(),
            error,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) => Err(LockError::Held(run_id.to_string())),
            Err(TryLockError::Error(error)) => Err(io(error)),
        }
    }
}
// ANCHOR_END: lock

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".runtime/wf-x-1.lock");
        let first = RunLock::try_take(&path, "wf-x-1").unwrap();
        let second = RunLock::try_take(&path, "wf-x-1").unwrap_err();
        assert!(matches!(second, LockError::Held(_)), "{second}");
        assert!(
            second
                .to_string()
                .contains("run wf-x-1 is already running in another session"),
            "{second}"
        );
        drop(first);
        RunLock::try_take(&path, "wf-x-1").unwrap();
        assert!(path.exists(), "the file stays");
    }
}
