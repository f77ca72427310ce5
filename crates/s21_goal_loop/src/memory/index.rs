//! `MEMORY.md`: the index of the store, one line per memory, rebuilt on
//! every write and shown to the model in the system prompt.
//!
//! ```text
//! - user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md
//! ```
//!
//! The index is small (a line per memory, and consolidation keeps the
//! store under ten files), so it can sit in the system prompt of every
//! request. The bodies stay on disk until recall loads the relevant ones.

use std::fs;
use std::path::Path;

pub use super::file::INDEX_FILE;
use super::file::{MEMORY_DIR, StoredMemory, one_line};

/// At most this many index lines reach the system prompt; a store that
/// large is overdue for consolidation, and the prompt must stay bounded.
pub const MAX_INDEX_LINES: usize = 200;

// ANCHOR: render
/// One index line: name — description — file.
pub fn line(stored: &StoredMemory) -> String {
    format!(
        "- {} — {} — {}",
        one_line(&stored.memory.name),
        one_line(&stored.memory.description),
        stored.file
    )
}

/// The whole index, in the store's order (by file name).
pub fn render(memories: &[StoredMemory]) -> String {
    memories.iter().map(|stored| line(stored) + "\n").collect()
}
// ANCHOR_END: render

// ANCHOR: section
/// The index of the store in `dir` as it is on disk now, cut to
/// [`MAX_INDEX_LINES`] lines, or `None` when there is no index or it lists
/// nothing.
pub fn read(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join(INDEX_FILE)).ok()?;
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut shown = lines[..lines.len().min(MAX_INDEX_LINES)].join("\n");
    if lines.len() > MAX_INDEX_LINES {
        shown.push_str(&format!(
            "\n… and {} more (see {MEMORY_DIR}/{INDEX_FILE})",
            lines.len() - MAX_INDEX_LINES
        ));
    }
    Some(shown)
}

/// The system prompt section built around the current index of the store
/// in `dir`, or `None` when the store is empty.
pub fn system_section(dir: &Path) -> Option<String> {
    let index = read(dir)?;
    Some(format!(
        "# Memory\n\
         These memories were saved in earlier sessions, one file each in {MEMORY_DIR}/ \
         (name — description — file):\n\
         {index}\n\
         The ones relevant to the user's request are added to their message in a \
         <memories> block. To read another one in full, use read_file on {MEMORY_DIR}/<file>. \
         Follow the preferences recorded here unless the user now says otherwise."
    ))
}
// ANCHOR_END: section
