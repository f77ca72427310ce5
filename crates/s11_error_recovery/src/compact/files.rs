//! Files the compaction layers write: saved tool results and transcripts.
//!
//! Both are written atomically — to a temporary file in the same directory,
//! then renamed over the final name — so a crash or a full disk never
//! leaves a half-written file where the model, or the user, will look for
//! the whole thing.

use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where layer 1 saves large tool results, relative to the workspace.
pub const TOOL_RESULTS_DIR: &str = ".task_outputs/tool-results";

/// Where layer 4 and reactive compaction save full transcripts, relative
/// to the workspace.
pub const TRANSCRIPTS_DIR: &str = ".transcripts";

/// The longest file name stem made from an id.
const MAX_STEM_CHARS: usize = 120;

// ANCHOR: write_atomic
/// Writes `contents` to `path` (creating its directory) so that `path`
/// holds either its old contents or all of the new ones, never a part.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("the path has no directory"))?;
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per process and per write, so two writes never share a
    // temporary file.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let temp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    // The rename is what makes the write all-or-nothing for readers. It is
    // not forced to disk first (`sync_all`): that costs milliseconds per
    // file, and these files are a convenience the session can live without
    // after a power cut, unlike, say, a task board (chapter 12).
    let written = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(contents)?;
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        // Best effort: the error that matters is the one returned.
        let _ = fs::remove_file(&temp);
    }
    written
}
// ANCHOR_END: write_atomic

/// A file name stem made from an id the model or the API chose: only
/// ASCII letters, digits, `-` and `_` are kept. When anything had to be
/// replaced, a hash of the original id is appended, so two ids that differ
/// only in replaced characters still get different files.
pub fn safe_stem(id: &str) -> String {
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_STEM_CHARS)
        .collect();
    if cleaned == id && !cleaned.is_empty() {
        return cleaned;
    }
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    let stem = if cleaned.is_empty() {
        "unknown"
    } else {
        &cleaned
    };
    format!("{stem}-{:08x}", hasher.finish() & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_safe_distinct_names() {
        assert_eq!(safe_stem("toolu_01AbC-9"), "toolu_01AbC-9");
        let escaping = safe_stem("../../etc/passwd");
        assert!(escaping.starts_with("______etc_passwd-"), "{escaping}");
        assert_ne!(safe_stem("a/b"), safe_stem("a.b"));
        assert!(safe_stem("").starts_with("unknown-"));
        assert!(safe_stem(&"x".repeat(500)).len() <= MAX_STEM_CHARS + 9);
    }

    #[test]
    fn atomic_write_replaces_whole_files_and_leaves_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/out.txt");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "second");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out.txt"]);
    }
}
