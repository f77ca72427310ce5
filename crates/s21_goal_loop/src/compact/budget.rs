//! Layer 1, the tool-result budget: large new results go to disk.
//!
//! One round can return a lot at once — five big files read in one reply.
//! When the `tool_result` blocks of the newest message add up to more than
//! the budget, the largest are written to `.task_outputs/tool-results/`,
//! one file per result named after its `tool_use_id`, and each is replaced
//! in the history by a marker: where the full output is, how long it was,
//! and its first characters. The model reads the file with `read_file`
//! if the preview is not enough.
//!
//! This layer runs first because it is the only one that keeps the full
//! text: the layers after it throw content away.

use std::path::Path;

use shared::protocol::{ContentBlock, Message, Role, ToolResultContent};

use super::config::CompactConfig;
use shared::fs::write_atomic;

use super::files::{TOOL_RESULTS_DIR, safe_stem};

/// The first line of every marker.
pub const MARKER_START: &str = "<persisted-output>";

/// What the layer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetReport {
    /// Paths (relative to the workspace) of the results saved to disk.
    pub saved: Vec<String>,
    /// Results that could not be saved and were left as they were.
    pub failed: usize,
    /// Characters of tool output in the newest message, before and after.
    pub chars_before: usize,
    pub chars_after: usize,
}

// ANCHOR: budget
/// Applies the budget to the newest message of `history`, saving files
/// under `root`. Only result contents change, never which blocks exist, so
/// every `tool_use` keeps its `tool_result`.
pub fn apply(history: &mut [Message], root: &Path, config: &CompactConfig) -> BudgetReport {
    let mut report = BudgetReport::default();
    let Some(last) = history.last_mut().filter(|last| last.role == Role::User) else {
        return report;
    };
    // (block index, characters) of each result, largest first.
    let mut sizes: Vec<(usize, usize)> = last
        .content
        .iter()
        .enumerate()
        .filter_map(|(index, block)| match block {
            ContentBlock::ToolResult(result) => Some((index, result.text().chars().count())),
            _ => None,
        })
        .collect();
    let mut total: usize = sizes.iter().map(|(_, chars)| chars).sum();
    report.chars_before = total;
    sizes.sort_by_key(|&(_, chars)| std::cmp::Reverse(chars));

    for (index, chars) in sizes {
        if total <= config.tool_result_budget_chars {
            break;
        }
        let ContentBlock::ToolResult(result) = &mut last.content[index] else {
            continue;
        };
        let text = result.text();
        let relative = format!("{TOOL_RESULTS_DIR}/{}.txt", safe_stem(&result.tool_use_id));
        let marker = marker(&relative, &text, config.preview_chars);
        let marker_chars = marker.chars().count();
        if marker_chars >= chars {
            // Saving would not make the message any shorter.
            continue;
        }
        if let Err(error) = write_atomic(&root.join(&relative), text.as_bytes()) {
            tracing::warn!(%error, path = %relative, "could not save a large tool result; kept in context");
            report.failed += 1;
            continue;
        }
        result.content = ToolResultContent::Text(marker);
        total = total - chars + marker_chars;
        report.saved.push(relative);
    }
    report.chars_after = total;
    report
}

/// What stands in for a saved result: where it is, its size, a preview.
pub fn marker(relative_path: &str, text: &str, preview_chars: usize) -> String {
    let chars = text.chars().count();
    let preview: String = text.chars().take(preview_chars).collect();
    format!(
        "{MARKER_START}\nFull output: {relative_path}\n\
         This result was {chars} characters, too large to keep in context; it is saved \
         in full at that path. Read the file if you need more than this preview.\n\
         Preview (first {} characters):\n{preview}\n</persisted-output>",
        preview.chars().count()
    )
}
// ANCHOR_END: budget

/// The path a marker points to, if `text` is a marker.
pub fn saved_path(text: &str) -> Option<&str> {
    let rest = text.strip_prefix(MARKER_START)?.strip_prefix('\n')?;
    let line = rest.lines().next()?;
    line.strip_prefix("Full output: ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_names_its_file_and_cuts_on_characters() {
        let marker = marker(".task_outputs/tool-results/a.txt", "ééééé", 2);
        assert_eq!(
            saved_path(&marker),
            Some(".task_outputs/tool-results/a.txt")
        );
        assert!(marker.contains("\néé\n</persisted-output>"), "{marker}");
        assert!(marker.contains("was 5 characters"), "{marker}");
        assert_eq!(saved_path("plain output"), None);
    }
}
