//! Comparing two lesson crates file by file: which files differ, the unified
//! diff, a `--stat` summary, and terminal colours.
//!
//! Both sides are normalised first (see [`crate::lessons`]), so paths in the
//! diff are crate-relative (`a/src/hooks.rs`) and the crate name reads `sNN`
//! on both sides.

use anyhow::Result;
use similar::{ChangeTag, TextDiff};

use crate::lessons::{self, Content, Lesson};

/// Lines of context around each change, as `diff -u` and git use.
const CONTEXT: usize = 3;

/// How a file differs between the two lessons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Added,
    Removed,
    Modified,
}

impl Status {
    /// The word the pages and messages use.
    pub fn word(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Modified => "changed",
        }
    }
}

/// One file that differs.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// Normalised crate-relative path, e.g. `src/dispatch.rs`.
    pub path: String,
    pub status: Status,
    pub old: Option<Content>,
    pub new: Option<Content>,
    /// Lines added and removed (0 for binary files).
    pub added: usize,
    pub removed: usize,
}

impl FileChange {
    fn new(path: String, old: Option<Content>, new: Option<Content>) -> Self {
        let status = match (&old, &new) {
            (None, _) => Status::Added,
            (_, None) => Status::Removed,
            _ => Status::Modified,
        };
        let old_text = old.as_ref().and_then(Content::text).unwrap_or("");
        let new_text = new.as_ref().and_then(Content::text).unwrap_or("");
        let (mut added, mut removed) = (0, 0);
        for change in TextDiff::from_lines(old_text, new_text).iter_all_changes() {
            match change.tag() {
                ChangeTag::Insert => added += 1,
                ChangeTag::Delete => removed += 1,
                ChangeTag::Equal => {}
            }
        }
        Self {
            path,
            status,
            old,
            new,
            added,
            removed,
        }
    }

    fn is_binary(&self) -> bool {
        matches!(self.old, Some(Content::Binary(_))) || matches!(self.new, Some(Content::Binary(_)))
    }

    /// This file's part of a unified diff, with `a/` and `b/` headers.
    pub fn unified(&self) -> String {
        let old_name = match self.status {
            Status::Added => "/dev/null".to_string(),
            _ => format!("a/{}", self.path),
        };
        let new_name = match self.status {
            Status::Removed => "/dev/null".to_string(),
            _ => format!("b/{}", self.path),
        };
        if self.is_binary() {
            return format!("Binary files {old_name} and {new_name} differ\n");
        }
        let old_text = self.old.as_ref().and_then(Content::text).unwrap_or("");
        let new_text = self.new.as_ref().and_then(Content::text).unwrap_or("");
        let diff = TextDiff::from_lines(old_text, new_text);
        let mut out = diff
            .unified_diff()
            .context_radius(CONTEXT)
            .missing_newline_hint(true)
            .header(&old_name, &new_name)
            .to_string();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out
    }
}

/// Every file that differs between `old` and `new`, sorted by path.
pub fn compare(old: &Lesson, new: &Lesson) -> Result<Vec<FileChange>> {
    let mut old_files = lessons::files(old)?;
    let new_files = lessons::files(new)?;
    let mut changes = Vec::new();
    for (path, new_content) in new_files {
        match old_files.remove(&path) {
            Some(old_content) if old_content == new_content => {}
            old_content => changes.push(FileChange::new(path, old_content, Some(new_content))),
        }
    }
    for (path, old_content) in old_files {
        changes.push(FileChange::new(path, Some(old_content), None));
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changes)
}

/// The whole unified diff of `changes`.
pub fn unified(changes: &[FileChange]) -> String {
    changes.iter().map(FileChange::unified).collect()
}

/// Total lines added and removed.
pub fn totals(changes: &[FileChange]) -> (usize, usize) {
    changes.iter().fold((0, 0), |(added, removed), change| {
        (added + change.added, removed + change.removed)
    })
}

/// A `git diff --stat` style summary: one line per file, then totals.
pub fn stat(changes: &[FileChange]) -> String {
    const BAR: usize = 50;
    let width = changes.iter().map(|c| c.path.len()).max().unwrap_or(0);
    let most = changes
        .iter()
        .map(|c| c.added + c.removed)
        .max()
        .unwrap_or(0);
    let digits = most.to_string().len();
    let mut out = String::new();
    for change in changes {
        let total = change.added + change.removed;
        // Scale the bar only when the largest file would not fit.
        let scale = |n: usize| {
            if most <= BAR {
                n
            } else {
                (n * BAR).div_ceil(most)
            }
        };
        let detail = if change.is_binary() {
            "Bin".to_string()
        } else {
            format!(
                "{total:>digits$} {}{}",
                "+".repeat(scale(change.added)),
                "-".repeat(scale(change.removed))
            )
        };
        let note = match change.status {
            Status::Modified => String::new(),
            status => format!(" ({})", status.word()),
        };
        out.push_str(&format!(" {:width$} | {detail}{note}\n", change.path));
    }
    let (added, removed) = totals(changes);
    out.push_str(&format!(
        " {} file{} changed, {added} insertion{}(+), {removed} deletion{}(-)\n",
        changes.len(),
        plural(changes.len()),
        plural(added),
        plural(removed)
    ));
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Colours a unified diff or stat for a terminal, the way git does.
pub fn colour(text: &str) -> String {
    const RESET: &str = "\x1b[0m";
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let style = if body.starts_with("+++ ") || body.starts_with("--- ") {
            "\x1b[1m"
        } else if body.starts_with("@@") {
            "\x1b[36m"
        } else if body.starts_with('+') {
            "\x1b[32m"
        } else if body.starts_with('-') {
            "\x1b[31m"
        } else if body.contains(" | ") {
            // A --stat line: colour the bar only.
            out.push_str(&colour_stat_line(body));
            out.push_str(newline);
            continue;
        } else {
            ""
        };
        if style.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(&format!("{style}{body}{RESET}{newline}"));
        }
    }
    out
}

fn colour_stat_line(line: &str) -> String {
    let Some((name, bar)) = line.rsplit_once(" | ") else {
        return line.to_string();
    };
    let bar = bar
        .replace('+', "\x1b[32m+\x1b[0m")
        .replace('-', "\x1b[31m-\x1b[0m");
    format!("{name} | {bar}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Option<Content> {
        Some(Content::Text(s.to_string()))
    }

    #[test]
    fn a_changed_file_gives_a_unified_diff_with_crate_relative_headers() {
        let change = FileChange::new("src/a.rs".into(), text("a\nb\nc\n"), text("a\nB\nc\n"));
        assert_eq!((change.added, change.removed), (1, 1));
        assert_eq!(
            change.unified(),
            "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }

    #[test]
    fn added_and_removed_files_diff_against_dev_null() {
        let added = FileChange::new("src/new.rs".into(), None, text("x\n"));
        assert_eq!(added.status, Status::Added);
        assert!(
            added
                .unified()
                .starts_with("--- /dev/null\n+++ b/src/new.rs\n")
        );
        let removed = FileChange::new("src/old.rs".into(), text("x\n"), None);
        assert_eq!(removed.status, Status::Removed);
        assert!(
            removed
                .unified()
                .starts_with("--- a/src/old.rs\n+++ /dev/null\n")
        );
    }

    #[test]
    fn stat_counts_lines_per_file_and_in_total() {
        let changes = [
            FileChange::new("src/a.rs".into(), text("a\n"), text("b\nc\n")),
            FileChange::new("src/new.rs".into(), None, text("x\n")),
        ];
        assert_eq!(
            stat(&changes),
            " src/a.rs   | 3 ++-\n src/new.rs | 1 + (added)\n 2 files changed, 3 insertions(+), 1 deletion(-)\n"
        );
    }

    #[test]
    fn colour_marks_added_and_removed_lines() {
        let coloured = colour("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same\n");
        assert!(coloured.contains("\x1b[31m-old\x1b[0m\n"));
        assert!(coloured.contains("\x1b[32m+new\x1b[0m\n"));
        assert!(coloured.contains("\n same\n"));
    }
}
