//! Worktree names, and the checks that make them safe to use.
//!
//! A name becomes two things: a directory, `.worktrees/<name>`, and a git
//! branch, `wt/<name>`. Names come from the model, so [`validate_name`]
//! runs before either is touched. It allows a small alphabet, which rules
//! out paths (`../x`, `a/b`) and shell surprises (spaces, quotes), and
//! then git's own rules for branch names, so that git never refuses a name
//! we accepted with a message about refs the model cannot act on.

use super::WorktreeError;

/// The longest name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// The prefix of every worktree's branch: the worktree `auth` works on the
/// branch `wt/auth`. A prefix keeps them apart from the user's branches.
pub const BRANCH_PREFIX: &str = "wt/";

/// The manager's own files in `.worktrees/`, which therefore cannot be
/// worktree names. (Its other files start with a dot, which names cannot.)
pub(crate) const RESERVED: [&str; 3] = ["bindings.json", "bindings.json.corrupt", "events.jsonl"];

// ANCHOR: validate_name
/// Checks that `name` can be a worktree name: 1 to 64 of `A-Z a-z 0-9 . _
/// -`, not starting with `.` or `-`, and acceptable to git as part of a
/// branch name (no `..`, no trailing `.` or `.lock`). The error names the
/// rule that was broken.
pub fn validate_name(name: &str) -> Result<(), WorktreeError> {
    let refuse = |rule: String| {
        Err(WorktreeError::InvalidName {
            name: name.to_string(),
            rule,
        })
    };
    if name.is_empty() {
        return refuse("it is empty".to_string());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return refuse(format!("it contains the character {bad:?}"));
    }
    // Only ASCII is left, so bytes and characters are the same count.
    if name.len() > MAX_NAME_CHARS {
        return refuse(format!(
            "it is {} characters long, more than {MAX_NAME_CHARS}",
            name.len()
        ));
    }
    if name == "." || name == ".." {
        return refuse("`.` and `..` name directories that already exist".to_string());
    }
    if name.starts_with('-') {
        return refuse("it starts with `-`, so git would read it as an option".to_string());
    }
    if name.starts_with('.') {
        return refuse("it starts with `.`, which git does not allow in a branch name".to_string());
    }
    if name.contains("..") {
        return refuse("it contains `..`, which git does not allow in a branch name".to_string());
    }
    if name.ends_with(".lock") {
        return refuse("it ends with `.lock`, which git keeps for its lock files".to_string());
    }
    if name.ends_with('.') {
        return refuse("it ends with `.`, which git does not allow in a branch name".to_string());
    }
    // Compared without case, because on macOS and Windows `Events.jsonl`
    // is the same file as `events.jsonl`.
    if RESERVED.iter().any(|file| file.eq_ignore_ascii_case(name)) {
        return refuse(format!(
            "`.worktrees/{name}` is one of the worktree manager's own files"
        ));
    }
    Ok(())
}
// ANCHOR_END: validate_name

/// The branch a worktree works on: `wt/<name>`.
pub fn branch_for(name: &str) -> String {
    format!("{BRANCH_PREFIX}{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for name in ["auth", "task-3", "fix_login", "v1.2", "A", &"a".repeat(64)] {
            assert!(validate_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn names_the_broken_rule() {
        for (name, rule) in [
            ("", "empty"),
            ("a b", "' '"),
            ("a/b", "'/'"),
            (&"a".repeat(65), "65 characters"),
            ("..", "`.` and `..`"),
            ("-x", "starts with `-`"),
            (".x", "starts with `.`"),
            ("a..b", "contains `..`"),
            ("x.lock", "`.lock`"),
            ("x.", "ends with `.`"),
            ("Events.JSONL", "own files"),
        ] {
            let Err(WorktreeError::InvalidName { rule: said, .. }) = validate_name(name) else {
                panic!("{name:?} was accepted");
            };
            assert!(said.contains(rule), "{name:?}: {said}");
        }
    }
}
