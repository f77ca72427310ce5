//! Writing the files the harness owns (`.memory/`, `.tasks/`, transcripts,
//! cron jobs, a workflow run's snapshot) so that no crash leaves one
//! half-written.
//!
//! Every file a lesson keeps on disk and rewrites whole goes through
//! [`write_atomic`]. Its promise, stated once here:
//!
//! * **Atomic for readers.** The contents go to a temporary file in the
//!   same directory, which is then renamed over the target. A rename within
//!   one file system replaces the name in one step, so a reader — another
//!   thread, another process, the next session — sees the old file or the
//!   new one, never a mix and never an empty file.
//! * **Durable once it returns.** The temporary file is flushed to disk
//!   (`fsync`) before the rename, and the directory after it, so after a
//!   power cut the target holds the old or the new contents and the name
//!   is not lost. That costs a few milliseconds a write, which is nothing
//!   next to a model call.
//! * **Clean on failure.** If any step fails, the temporary file is
//!   removed and the target is left as it was.
//!
//! Temporary files are dot files (`.name.tmp-PID-N`), which directory
//! listings and the lessons' loaders skip.
//!
//! The append-only logs (mailboxes, the worktree event log, workflow
//! journals) are not rewritten but appended a line at a time, and their
//! readers skip a torn line; ARCHITECTURE.md lists them.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

// ANCHOR: write_atomic
/// Replaces `path` with `contents` atomically and durably, creating its
/// directory if needed (see the module documentation for the guarantees).
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    // Unique per process and per write, so two writers never share a
    // temporary file.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))?
        .to_string_lossy();
    let temp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(contents.as_ref())?;
        file.sync_all()?;
        fs::rename(&temp, path)?;
        sync_dir(dir)
    })();
    if written.is_err() {
        // Best effort: the error that matters is the one returned.
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Flushes a directory's entries (the rename) to disk. Unix only: other
/// systems cannot open a directory as a file, and make renames durable on
/// their own terms.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
// ANCHOR_END: write_atomic

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_contents_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/state.json");
        write_atomic(&path, "first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "second");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
    }

    #[test]
    fn a_failed_write_leaves_the_target_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a directory, so the rename fails.
        let target = dir.path().join("taken");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("inside"), "x").unwrap();
        assert!(write_atomic(&target, "new").is_err());
        assert!(target.join("inside").is_file());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["taken"]);
    }
}
