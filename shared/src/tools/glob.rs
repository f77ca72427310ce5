//! The `glob` tool: find files by name pattern.
//!
//! Patterns are matched one path segment at a time:
//!
//! | pattern   | matches                                              |
//! |-----------|------------------------------------------------------|
//! | `*`       | any run of characters within one segment (not `/`)  |
//! | `?`       | one character                                        |
//! | `[abc]`   | one of the listed characters; `[a-z]` a range, `[!a]` or `[^a]` any but |
//! | `**`      | as a whole segment: any number of directories, even none |
//!
//! A trailing `**` (`src/**`) lists everything below that directory.
//!
//! So `*.md` finds Markdown files at the top of the workspace and `**/*.rs`
//! finds Rust files at any depth. Only files are listed, relative to the
//! workspace and sorted. `.git` and `target` directories are skipped (they
//! are large and never what the model is looking for), and symlinked
//! directories are neither listed nor entered, so the walk cannot loop or
//! leave the workspace.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::input::parse_input;
use super::{Workspace, plural};
use crate::hooks::ToolOutput;
use crate::protocol::ToolSpec;

/// The most paths one call returns.
pub const MAX_RESULTS: usize = 1000;

/// Directories the walk never enters.
const SKIPPED_DIRS: [&str; 2] = [".git", "target"];

#[derive(Deserialize)]
struct Input {
    pattern: String,
}

/// What the model is told about `glob`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        "glob",
        "Find files in the workspace by name pattern, e.g. `**/*.rs` or `src/*.md`. \
         `*` and `?` match within one path segment, `[abc]` matches one listed character \
         and `**` matches any number of directories. Returns matching file paths, \
         relative to the workspace and sorted, one per line.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, relative to the workspace."}
            },
            "required": ["pattern"]
        }),
    )
}

/// Runs the model's `glob` call.
pub async fn call(workspace: &Workspace, input: &Value) -> ToolOutput {
    let input: Input = match parse_input("glob", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    let segments = match split_pattern(workspace, &input.pattern) {
        Ok(segments) => segments,
        Err(output) => return output,
    };
    // Walking a big tree is blocking file-system work: keep it off the
    // async threads.
    let root = workspace.root().to_path_buf();
    let walk = tokio::task::spawn_blocking(move || find(&root, &segments)).await;
    match walk {
        Ok(paths) => ToolOutput::ok(report(&input.pattern, &paths)),
        Err(error) => ToolOutput::error(format!("glob failed: {error}")),
    }
}

/// All workspace files matching the pattern `segments`, as sorted relative
/// paths.
fn find(root: &Path, segments: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    walk(root, "", segments, &mut found);
    found
}

fn report(pattern: &str, paths: &BTreeSet<String>) -> String {
    if paths.is_empty() {
        return format!("No files match {pattern}");
    }
    let mut text: String = paths
        .iter()
        .take(MAX_RESULTS)
        .map(|path| format!("{path}\n"))
        .collect();
    if paths.len() > MAX_RESULTS {
        text.push_str(&format!(
            "... [{} not shown; use a narrower pattern]\n",
            plural(paths.len() - MAX_RESULTS, "more match")
        ));
    }
    text
}

/// Splits a pattern into segments, refusing patterns that would look
/// outside the workspace. An absolute pattern is accepted if it starts
/// with the workspace root.
fn split_pattern(workspace: &Workspace, pattern: &str) -> Result<Vec<String>, ToolOutput> {
    let root = workspace.root().to_string_lossy();
    let relative = if Path::new(pattern).is_absolute() {
        pattern
            .strip_prefix(root.as_ref())
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .ok_or_else(|| {
                ToolOutput::error(format!(
                    "path escapes the workspace: {pattern} (glob patterns are relative to {root})"
                ))
            })?
    } else {
        pattern
    };
    let mut segments: Vec<String> = Vec::new();
    for segment in relative.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                return Err(ToolOutput::error(format!(
                    "path escapes the workspace: {pattern} (glob patterns may not use ..)"
                )));
            }
            // `**/**` means the same as `**`, and collapsing them keeps the
            // walk from trying the same directories over and over.
            "**" if segments.last().is_some_and(|last| last == "**") => {}
            _ => segments.push(segment.to_string()),
        }
    }
    // A trailing `**` means everything below: `src/**` is `src/**/*`.
    if segments.last().is_some_and(|last| last == "**") {
        segments.push("*".to_string());
    }
    if segments.is_empty() {
        return Err(ToolOutput::error(format!(
            "the pattern {pattern:?} names no files; try `*` or `**/*`"
        )));
    }
    Ok(segments)
}

/// Adds to `found` the files under `dir` (shown as `prefix`) that match
/// `segments`. Unreadable directories are skipped rather than failing the
/// whole search.
fn walk(dir: &Path, prefix: &str, segments: &[String], found: &mut BTreeSet<String>) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    if first == "**" {
        // Zero directories: match the rest right here...
        walk(dir, prefix, rest, found);
        // ...or one more directory, still inside the `**`.
        for (name, path, is_dir) in entries(dir) {
            if is_dir {
                walk(&path, &join(prefix, &name), segments, found);
            }
        }
        return;
    }
    for (name, path, is_dir) in entries(dir) {
        if !matches_segment(first, &name) {
            continue;
        }
        if rest.is_empty() {
            if !is_dir {
                found.insert(join(prefix, &name));
            }
        } else if is_dir {
            walk(&path, &join(prefix, &name), rest, found);
        }
    }
}

/// The entries of `dir` as (name, path, is a directory), minus the skipped
/// directories and symlinks to directories: the walk never follows a
/// symlink, so it cannot loop or wander out of the workspace.
fn entries(dir: &Path) -> Vec<(String, PathBuf, bool)> {
    let Ok(reader) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    reader
        .filter_map(Result::ok)
        .filter_map(|entry| {
            // `file_type` describes the entry itself, not a symlink's target.
            let file_type = entry.file_type().ok()?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let skipped = if file_type.is_symlink() {
                path.is_dir()
            } else {
                file_type.is_dir() && SKIPPED_DIRS.contains(&name.as_str())
            };
            (!skipped).then(|| (name, path, file_type.is_dir()))
        })
        .collect()
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// One piece of a segment pattern.
#[derive(Debug, PartialEq)]
enum Token {
    Literal(char),
    /// `?`
    AnyChar,
    /// `*`
    AnyRun,
    /// `[...]`: inclusive character ranges (`a` is `a-a`), maybe negated.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Whether `name` (one path segment) matches `pattern` (one pattern
/// segment, without `/`).
fn matches_segment(pattern: &str, name: &str) -> bool {
    let tokens = tokenize(pattern);
    let name: Vec<char> = name.chars().collect();
    matches_tokens(&tokens, &name)
}

/// The classic wildcard match with one backtrack point: when a later part
/// fails, the most recent `*` swallows one more character and we retry.
/// This runs in time proportional to pattern × name, never exponential.
fn matches_tokens(tokens: &[Token], name: &[char]) -> bool {
    let (mut t, mut n) = (0, 0);
    // Where to resume after the last `*`: (token after it, name position).
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match tokens.get(t) {
            Some(Token::AnyRun) => {
                star = Some((t + 1, n));
                t += 1;
            }
            Some(token) if token_matches(token, name[n]) => {
                t += 1;
                n += 1;
            }
            _ => match star {
                Some((after_star, start)) => {
                    star = Some((after_star, start + 1));
                    t = after_star;
                    n = start + 1;
                }
                None => return false,
            },
        }
    }
    // The name is used up; only `*`s may remain in the pattern.
    tokens[t..].iter().all(|token| *token == Token::AnyRun)
}

fn token_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(literal) => *literal == c,
        Token::AnyChar => true,
        Token::AnyRun => false,
        Token::Class { negated, ranges } => {
            let inside = ranges.iter().any(|&(low, high)| low <= c && c <= high);
            inside != *negated
        }
    }
}

fn tokenize(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let token = match chars[i] {
            '*' => Token::AnyRun,
            '?' => Token::AnyChar,
            '[' => match parse_class(&chars[i + 1..]) {
                Some((class, used)) => {
                    i += used;
                    class
                }
                // An unclosed `[` is just a bracket.
                None => Token::Literal('['),
            },
            // A backslash makes the next character literal: `\*`, `\[`.
            '\\' if i + 1 < chars.len() => {
                i += 1;
                Token::Literal(chars[i])
            }
            c => Token::Literal(c),
        };
        // `**` inside a segment (like `a**b`) means the same as `*`.
        if !(token == Token::AnyRun && tokens.last() == Some(&Token::AnyRun)) {
            tokens.push(token);
        }
        i += 1;
    }
    tokens
}

/// Parses the inside of `[...]`, starting just after the `[`. Returns the
/// class and how many characters it used, including the closing `]`.
fn parse_class(chars: &[char]) -> Option<(Token, usize)> {
    let mut i = 0;
    let negated = matches!(chars.first(), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    // A `]` right at the start is a member, not the end: `[]a]`.
    let mut first = true;
    loop {
        let c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        match (chars.get(i + 1), chars.get(i + 2)) {
            (Some('-'), Some(&high)) if high != ']' => {
                ranges.push((c, high));
                i += 3;
            }
            _ => {
                ranges.push((c, c));
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_wildcards() {
        assert!(matches_segment("*.rs", "main.rs"));
        assert!(matches_segment("*.rs", ".rs"));
        assert!(!matches_segment("*.rs", "main.rs.bak"));
        assert!(matches_segment("a*b*c", "aXXbYYc"));
        assert!(!matches_segment("a*b*c", "aXXbYY"));
        assert!(matches_segment("?.md", "a.md"));
        assert!(!matches_segment("?.md", "ab.md"));
        assert!(matches_segment("*", ""));
        assert!(matches_segment("é*", "été"));
    }

    #[test]
    fn character_classes() {
        assert!(matches_segment("[abc].txt", "b.txt"));
        assert!(!matches_segment("[abc].txt", "d.txt"));
        assert!(matches_segment("file[0-9]", "file7"));
        assert!(!matches_segment("file[!0-9]", "file7"));
        assert!(matches_segment("file[^0-9]", "fileX"));
        assert!(matches_segment("[]x]", "]"));
        assert!(matches_segment("[a-]", "-"));
        assert!(matches_segment("[oops", "[oops"));
        assert!(matches_segment(r"\*", "*"));
        assert!(!matches_segment(r"\*", "x"));
    }
}
