//! Forbidden variants (rule 14 of `cargo xtask check`): a translation's
//! glossary lists the spellings its book does not use, and no page of that
//! edition may use them outside code.
//!
//! The list is the table under the glossary's heading with the id
//! `forbidden` (`## 不使用的写法 {#forbidden}`), one row per variant: the
//! variant in a code span in the first column, what to write instead in
//! the second, the reason in the third:
//!
//! ```text
//! | 不用 | 改用 | 原因 |
//! | --- | --- | --- |
//! | `简介` | `引言` | 本书统一 |
//! ```
//!
//! A glossary without that section forbids nothing, and the glossary
//! itself is not searched. Code spans and code
//! blocks are not searched: they show code and program output, which stay
//! as the program writes them. A variant is matched as a plain substring,
//! so only spellings that are wrong in every sense belong in the table; a
//! word that is right in one sense and wrong in another is left to the
//! reader (and the glossary's terms table).

use std::path::Path;

use anyhow::Result;
use pulldown_cmark::{Event, Options, Parser, Tag};

use crate::i18n::{self, Edition};
use crate::lessons;
use crate::markdown;
use crate::problem::Problem;

/// The id of the glossary heading whose table lists the variants.
const SECTION_ID: &str = "{#forbidden}";

/// One row of the table: a spelling the edition does not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    /// The text that must not appear (the first column's code span).
    pub text: String,
    /// What to write instead (the second column, backquotes removed).
    pub instead: String,
    /// Why (the third column).
    pub reason: String,
}

/// The variants a glossary forbids, in the order of its table.
pub fn forbidden(glossary: &str) -> Vec<Forbidden> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut rows = 0;
    for line in glossary.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            // The section runs to the next heading of any level.
            inside = trimmed.ends_with(SECTION_ID);
            continue;
        }
        if !inside || !trimmed.starts_with('|') {
            continue;
        }
        rows += 1;
        // Row 1 is the header, row 2 the delimiter row.
        if rows <= 2 {
            continue;
        }
        let cells: Vec<&str> = trimmed
            .trim_start_matches('|')
            .trim_end_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let Some((_, text)) = cells
            .first()
            .and_then(|cell| markdown::code_spans(cell).into_iter().next())
        else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        let unquote = |cell: Option<&&str>| cell.map(|c| c.replace('`', "")).unwrap_or_default();
        out.push(Forbidden {
            text,
            instead: unquote(cells.get(1)),
            reason: unquote(cells.get(2)),
        });
    }
    out
}

/// `text` with every code span and code block blanked out (line breaks
/// kept, so lines keep their numbers).
fn without_code(text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        let code = matches!(event, Event::Code(_) | Event::Start(Tag::CodeBlock(_)));
        if code {
            for byte in &mut bytes[range] {
                if *byte != b'\n' {
                    *byte = b' ';
                }
            }
        }
    }
    // Ranges are whole characters, each byte of which became one ASCII
    // space, so the text is still UTF-8.
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Each use of a variant in `text` outside code: its 1-based line and the
/// row it breaks, once per occurrence.
pub fn uses<'a>(text: &str, forbidden: &'a [Forbidden]) -> Vec<(usize, &'a Forbidden)> {
    let mut out = Vec::new();
    for (index, line) in without_code(text).lines().enumerate() {
        for variant in forbidden {
            for _ in line.matches(variant.text.as_str()) {
                out.push((index + 1, variant));
            }
        }
    }
    out
}

/// Rule 14: for each translation, every use of a variant its glossary
/// forbids, in its hand-written pages (the generated ones are made from the
/// chapters' own titles and the phrase table).
pub fn problems(root: &Path, editions: &[&Edition]) -> Result<Vec<Problem>> {
    let mut out = Vec::new();
    for edition in editions.iter().filter(|e| !e.is_english()) {
        let dir = root.join(edition.src());
        let Ok(glossary) = std::fs::read_to_string(dir.join("glossary.md")) else {
            // A missing glossary is reported by rule 11.
            continue;
        };
        let forbidden = forbidden(&glossary);
        if forbidden.is_empty() {
            continue;
        }
        let mut files = lessons::files_with_extension(&dir, "md")?;
        files.sort();
        for file in files {
            let relative = lessons::relative_path(&dir, &file);
            // The glossary names other spellings on purpose: the Python
            // course's terms in their column, and the variants themselves.
            if i18n::is_generated(&relative) || relative == "glossary.md" {
                continue;
            }
            let text = std::fs::read_to_string(&file)?;
            for (line, variant) in uses(&text, &forbidden) {
                out.push(Problem {
                    place: format!("{}/{relative}:{line}", edition.src()),
                    message: format!(
                        "{} (use {}: {})",
                        variant.text, variant.instead, variant.reason
                    ),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLOSSARY: &str = "# 术语表 {#glossary}\n\n| English | 中文 |\n| --- | --- |\n| introduction | 引言 |\n\n\
        ## 不使用的写法 {#forbidden}\n\n| 不用 | 改用 | 原因 |\n| --- | --- | --- |\n\
        | `简介` | `引言` | 本书统一 |\n| `通知消息` | 提示 | 与任务通知区分 |\n\n## 其他 {#other}\n\n| `x` | y | z |\n";

    #[test]
    fn the_table_under_the_forbidden_heading_is_read_and_nothing_else() {
        let found = forbidden(GLOSSARY);
        assert_eq!(
            found,
            [
                Forbidden {
                    text: "简介".into(),
                    instead: "引言".into(),
                    reason: "本书统一".into()
                },
                Forbidden {
                    text: "通知消息".into(),
                    instead: "提示".into(),
                    reason: "与任务通知区分".into()
                },
            ]
        );
        assert!(forbidden("# 术语表\n\n| `简介` | 引言 | x |\n").is_empty());
    }

    #[test]
    fn code_spans_and_blocks_are_not_searched() {
        let rows = forbidden(GLOSSARY);
        let text =
            "# 简介\n\n`简介` 与 ``简介`` 不算。\n\n```text\n简介\n```\n\n再说简介，简介。\n";
        let lines: Vec<usize> = uses(text, &rows).into_iter().map(|(l, _)| l).collect();
        assert_eq!(lines, [1, 9, 9]);
    }
}
