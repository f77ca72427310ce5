//! Files the compaction layers write: saved tool results and transcripts.
//!
//! Both are written with [`shared::fs::write_atomic`] — to a temporary file
//! in the same directory, then renamed over the final name — so a crash or
//! a full disk never leaves a half-written file where the model, or the
//! user, will look for the whole thing.

use std::hash::{DefaultHasher, Hash, Hasher};

/// Where layer 1 saves large tool results, relative to the workspace.
pub const TOOL_RESULTS_DIR: &str = ".task_outputs/tool-results";

/// Where layer 4 and reactive compaction save full transcripts, relative
/// to the workspace.
pub const TRANSCRIPTS_DIR: &str = ".transcripts";

/// The longest file name stem made from an id.
const MAX_STEM_CHARS: usize = 120;

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
}
