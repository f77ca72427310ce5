//! What the manager reports: a worktree, a removal, a task's worktree.
//!
//! Each has a `Display` that is one line for the model, saying what is at
//! stake in words rather than fields, because that line is what it reads
//! before deciding to keep, merge or remove.

use std::fmt;
use std::path::PathBuf;

use super::WORKTREES_DIR;
use super::error::plural;

// ANCHOR: worktree
/// One worktree under `.worktrees/`, as git reports it, with what the
/// manager knows about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub name: String,
    /// `<root>/.worktrees/<name>`.
    pub path: PathBuf,
    /// The branch checked out there: `wt/<name>` unless someone switched
    /// it; `None` when its `HEAD` is detached.
    pub branch: Option<String>,
    /// The task it is bound to, if any.
    pub task_id: Option<String>,
    /// Kept for review: its branch is waiting for a person.
    pub kept: bool,
    /// Paths with uncommitted changes, untracked files included (0 when
    /// the directory is missing: there is nothing left to look at).
    pub uncommitted: usize,
    /// Commits on the worktree that the main checkout's `HEAD` does not
    /// have: what removing it would lose.
    pub unmerged_commits: usize,
    /// Why its directory counts as missing (git's word for this is
    /// "prunable"), or `None` when it is there. Git still lists such a
    /// worktree and keeps its branch; [`WorktreeManager::remove`](super::WorktreeManager::remove) clears it.
    pub missing: Option<String>,
}
// ANCHOR_END: worktree

/// What [`WorktreeManager::remove`](super::WorktreeManager::remove) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub name: String,
    /// The branch deleted with it (`None` if it no longer existed).
    pub branch: Option<String>,
    /// The task it was bound to.
    pub task_id: Option<String>,
    /// Uncommitted changes thrown away (only ever non-zero when the caller
    /// asked to discard them).
    pub discarded_changes: usize,
    /// Unmerged commits thrown away (likewise).
    pub discarded_commits: usize,
}

/// The worktree bound to a task: where a teammate that claims the task
/// runs its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundWorktree {
    pub name: String,
    pub path: PathBuf,
}

/// One line for the model: name, place, branch, task, and what is at stake.
impl fmt::Display for Worktree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {WORKTREES_DIR}/{}", self.name, self.name)?;
        match &self.branch {
            Some(branch) => write!(f, ", branch {branch}")?,
            None => f.write_str(", detached HEAD")?,
        }
        if let Some(task_id) = &self.task_id {
            write!(f, ", task {task_id}")?;
        }
        let mut state = Vec::new();
        if let Some(reason) = &self.missing {
            state.push(format!(
                "directory missing ({reason}), remove it to clear it"
            ));
        }
        if self.uncommitted > 0 {
            state.push(plural(
                self.uncommitted,
                "uncommitted change",
                "uncommitted changes",
            ));
        }
        if self.unmerged_commits > 0 {
            state.push(plural(
                self.unmerged_commits,
                "commit not on the main checkout's HEAD",
                "commits not on the main checkout's HEAD",
            ));
        }
        if state.is_empty() {
            state.push("clean".to_string());
        }
        write!(f, ": {}", state.join(", "))?;
        if self.kept {
            f.write_str("; kept for review")?;
        }
        Ok(())
    }
}

impl fmt::Display for Removed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "removed the worktree `{}`", self.name)?;
        if let Some(branch) = &self.branch {
            write!(f, " and its branch {branch}")?;
        }
        let mut discarded = Vec::new();
        if self.discarded_changes > 0 {
            discarded.push(plural(
                self.discarded_changes,
                "uncommitted change",
                "uncommitted changes",
            ));
        }
        if self.discarded_commits > 0 {
            discarded.push(plural(
                self.discarded_commits,
                "unmerged commit",
                "unmerged commits",
            ));
        }
        if !discarded.is_empty() {
            write!(f, ", discarding {}", discarded.join(" and "))?;
        }
        Ok(())
    }
}
