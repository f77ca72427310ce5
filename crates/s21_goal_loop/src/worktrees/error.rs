//! Everything that can go wrong with a worktree, in words the model can act
//! on.
//!
//! These errors end up in tool results, so each message names what it is
//! about (the worktree, the path, the git command) and says what to do
//! next. A message that only said "failed" would leave the model guessing,
//! and a guessing model retries the same call.

use std::fmt;
use std::io;
use std::path::PathBuf;

// ANCHOR: error
/// Why a worktree operation did not happen (or, for [`WorktreeError::Io`]
/// after git succeeded, did not fully happen: its message says so).
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The name breaks one of the rules of [`super::validate_name`].
    #[error(
        "invalid worktree name `{name}`: {rule}; use 1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter, digit or `_`"
    )]
    InvalidName { name: String, rule: String },

    /// The workspace root is missing.
    #[error("{} does not exist or is not a directory, so it cannot hold worktrees", root.display())]
    NoWorkspace { root: PathBuf },

    /// The workspace is not inside a git repository.
    #[error(
        "{} is not a git repository; run `git init` and make a first commit, or work without worktrees",
        root.display()
    )]
    NotARepository { root: PathBuf },

    /// The repository exists but `HEAD` names no commit yet.
    #[error(
        "the git repository at {} has no commits yet, and a worktree starts from a commit; make a first commit (`git add -A && git commit -m \"initial commit\"`), or work without worktrees",
        root.display()
    )]
    NoCommits { root: PathBuf },

    /// Something already uses the name.
    #[error("cannot create the worktree `{name}`: {taken}")]
    NameTaken { name: String, taken: Taken },

    /// The task already has a worktree; a task has at most one, so a
    /// teammate that claims it knows where to work.
    #[error(
        "task `{task_id}` is already bound to the worktree `{worktree}`; work in that one, or remove it first"
    )]
    TaskAlreadyBound { task_id: String, worktree: String },

    /// No worktree of that name under `.worktrees/`.
    #[error("there is no worktree named `{name}`; {}", existing_names(existing))]
    NotFound { name: String, existing: Vec<String> },

    /// Removing the worktree would throw work away, and the caller did not
    /// say that is fine.
    #[error(
        "the worktree `{name}` was not removed: it has {}, which removing it would lose; commit and merge the work, keep the worktree for review, or remove it with discard_changes to throw the work away",
        lost_work(*uncommitted, *unmerged_commits)
    )]
    WouldLoseWork {
        name: String,
        uncommitted: usize,
        unmerged_commits: usize,
    },

    /// A git command failed for a reason of its own; git's message is the
    /// most precise explanation there is, so it is passed on whole.
    #[error("`git {command}` failed ({status}): {}", stderr_or_nothing(stderr))]
    Git {
        command: String,
        status: String,
        stderr: String,
    },

    /// The `git` program could not be started at all.
    #[error("could not run `git`: {source}; install git, or work without worktrees")]
    GitUnavailable {
        #[source]
        source: io::Error,
    },

    /// A file of the manager's own (`.worktrees/…`) could not be read or
    /// written. `context` says which, and what state that leaves.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}
// ANCHOR_END: error

/// What already uses a name that [`WorktreeError::NameTaken`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// A worktree of that name exists.
    Worktree(PathBuf),
    /// Something that is not a worktree is in the way.
    Directory(PathBuf),
    /// Git still has a worktree registered there, though its directory is
    /// gone.
    Registered(PathBuf),
    /// The branch exists, left over from an earlier worktree or made by
    /// hand.
    Branch(String),
}

impl fmt::Display for Taken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Worktree(path) => write!(
                f,
                "a worktree of that name already exists at {}; pick another name, or remove that worktree first",
                path.display()
            ),
            Self::Directory(path) => write!(
                f,
                "{} already exists and is not a worktree; pick another name, or move it away",
                path.display()
            ),
            Self::Registered(path) => write!(
                f,
                "git still has a worktree registered at {}, whose directory is gone; pick another name, or remove that worktree first to clear it",
                path.display()
            ),
            Self::Branch(branch) => write!(
                f,
                "the branch `{branch}` already exists (left over from an earlier worktree?); pick another name, or delete it with `git branch -D {branch}` if its commits are not needed"
            ),
        }
    }
}

fn existing_names(existing: &[String]) -> String {
    if existing.is_empty() {
        "there are no worktrees yet".to_string()
    } else {
        format!("the worktrees are: {}", existing.join(", "))
    }
}

fn lost_work(uncommitted: usize, unmerged_commits: usize) -> String {
    let changes = plural(
        uncommitted,
        "uncommitted change (untracked files included)",
        "uncommitted changes (untracked files included)",
    );
    let commits = plural(
        unmerged_commits,
        "commit not merged into the main checkout's HEAD",
        "commits not merged into the main checkout's HEAD",
    );
    match (uncommitted, unmerged_commits) {
        (0, _) => commits,
        (_, 0) => changes,
        _ => format!("{changes} and {commits}"),
    }
}

/// `1 commit`, `2 commits`.
pub(crate) fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

fn stderr_or_nothing(stderr: &str) -> &str {
    if stderr.trim().is_empty() {
        "git printed no message"
    } else {
        stderr.trim()
    }
}
