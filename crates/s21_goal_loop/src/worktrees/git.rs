//! The git commands the manager runs, each one a call of the real `git`
//! program.
//!
//! Worktrees are git's feature, so the manager asks git rather than
//! reading `.git/` itself: git knows the rules (locks, the layout of
//! `.git/worktrees/`, what counts as a change) and keeps them from version
//! to version. This file is the only one that starts git, and it starts it
//! the same way every time (see [`git`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::WorktreeError;

// ANCHOR: git
/// A `git -C <dir>` command, set up so that nothing in the caller's
/// environment changes what it does.
fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        // Set by git for its hooks, and by some tools: any of them would
        // point git at another repository than the one in `dir`.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_COMMON_DIR")
        // English messages, because a few of them are recognised below.
        .env("LC_ALL", "C")
        // Nothing we run asks a question; if git ever did, it must not
        // wait for an answer that never comes.
        .stdin(Stdio::null());
    command
}

/// Runs `command` and returns its standard output, or an error carrying
/// the command line and git's own message.
fn run(command: &mut Command) -> Result<String, WorktreeError> {
    let output = command
        .output()
        .map_err(|source| WorktreeError::GitUnavailable { source })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let args: Vec<_> = command.get_args().map(OsStr::to_string_lossy).collect();
    Err(WorktreeError::Git {
        command: args.join(" "),
        status: match output.status.code() {
            Some(code) => format!("exit code {code}"),
            None => "killed by a signal".to_string(),
        },
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
    })
}
// ANCHOR_END: git

/// Turns git's "not a git repository" into the error that says what to do
/// about it. Other failures (a repository owned by another user, say) keep
/// git's message, which names the problem better than we could.
fn in_repository(
    root: &Path,
    result: Result<String, WorktreeError>,
) -> Result<String, WorktreeError> {
    match result {
        Err(WorktreeError::Git { stderr, .. }) if stderr.contains("not a git repository") => {
            Err(WorktreeError::NotARepository {
                root: root.to_path_buf(),
            })
        }
        other => other,
    }
}

/// Checks that `root` is inside a git repository.
pub(crate) fn check_repository(root: &Path) -> Result<(), WorktreeError> {
    in_repository(root, run(git(root).args(["rev-parse", "--git-dir"]))).map(drop)
}

/// Checks that `HEAD` names a commit: a new worktree starts from it.
pub(crate) fn check_has_commit(root: &Path) -> Result<(), WorktreeError> {
    // `--quiet` makes a missing commit a plain exit code 1 with no message;
    // anything else is a real failure.
    match run(git(root).args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])) {
        Ok(_) => Ok(()),
        Err(WorktreeError::Git { stderr, .. }) if stderr.is_empty() => {
            Err(WorktreeError::NoCommits {
                root: root.to_path_buf(),
            })
        }
        Err(other) => Err(other),
    }
}

/// One worktree as `git worktree list --porcelain` describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Listed {
    pub path: PathBuf,
    /// The commit checked out.
    pub head: Option<String>,
    /// The branch checked out, without `refs/heads/`; `None` when detached.
    pub branch: Option<String>,
    /// Git's reason for calling it prunable (its directory is gone).
    pub prunable: Option<String>,
}

/// Every worktree of the repository, the main checkout included.
pub(crate) fn list_worktrees(root: &Path) -> Result<Vec<Listed>, WorktreeError> {
    let text = in_repository(
        root,
        run(git(root).args(["worktree", "list", "--porcelain"])),
    )?;
    Ok(parse_porcelain(&text))
}

/// Parses the porcelain format: one `key value` line per attribute, a
/// blank line after each worktree. Lines we do not use (`bare`,
/// `detached`, `locked`) are skipped, so newer git versions that add lines
/// do not break us.
fn parse_porcelain(text: &str) -> Vec<Listed> {
    let mut worktrees = Vec::new();
    let mut current: Option<Listed> = None;
    for line in text.lines() {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "worktree" => {
                worktrees.extend(current.take());
                current = Some(Listed {
                    path: PathBuf::from(value),
                    ..Listed::default()
                });
            }
            "HEAD" => {
                if let Some(listed) = current.as_mut() {
                    listed.head = Some(value.to_string());
                }
            }
            "branch" => {
                if let Some(listed) = current.as_mut() {
                    let short = value.strip_prefix("refs/heads/").unwrap_or(value);
                    listed.branch = Some(short.to_string());
                }
            }
            "prunable" => {
                if let Some(listed) = current.as_mut() {
                    listed.prunable = Some(value.to_string());
                }
            }
            _ => {}
        }
    }
    worktrees.extend(current);
    worktrees
}

/// Whether the local branch `branch` exists.
pub(crate) fn branch_exists(root: &Path, branch: &str) -> Result<bool, WorktreeError> {
    let reference = format!("refs/heads/{branch}");
    match run(git(root).args(["rev-parse", "--verify", "--quiet", &reference])) {
        Ok(_) => Ok(true),
        Err(WorktreeError::Git { stderr, .. }) if stderr.is_empty() => Ok(false),
        Err(other) => Err(other),
    }
}

/// `git worktree add -b <branch> <path> HEAD`: a new branch from the main
/// checkout's current commit, checked out at `path`.
pub(crate) fn add_worktree(root: &Path, path: &Path, branch: &str) -> Result<(), WorktreeError> {
    run(git(root)
        .args(["worktree", "add", "-b", branch])
        .arg(path)
        .arg("HEAD"))
    .map(drop)
}

/// `git worktree remove`, with `--force` only when the caller agreed to
/// lose changes.
pub(crate) fn remove_worktree(root: &Path, path: &Path, force: bool) -> Result<(), WorktreeError> {
    let mut command = git(root);
    command.args(["worktree", "remove"]);
    if force {
        command.arg("--force");
    }
    run(command.arg(path)).map(drop)
}

/// `git branch -D <branch>`. The caller has checked that its commits may go.
pub(crate) fn delete_branch(root: &Path, branch: &str) -> Result<(), WorktreeError> {
    run(git(root).args(["branch", "-D", branch])).map(drop)
}

/// How many paths in the worktree at `path` have uncommitted changes,
/// untracked files included (an untracked directory counts once; ignored
/// files do not count).
pub(crate) fn uncommitted(path: &Path) -> Result<usize, WorktreeError> {
    // `--no-optional-locks`: a plain `git status` may rewrite the index to
    // cache what it learned, which takes the index lock and can make a
    // teammate's `git add` in that worktree fail. We only look.
    // `--untracked-files=normal` overrides a user's
    // `status.showUntrackedFiles=no`, which would hide new files from us.
    let text = run(git(path).args([
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=normal",
    ]))?;
    Ok(text.lines().filter(|line| !line.is_empty()).count())
}

/// How many commits are reachable from any of `tips` but not from the main
/// checkout's `HEAD`: the commits that deleting those tips would lose.
pub(crate) fn commits_not_on_head(root: &Path, tips: &[String]) -> Result<usize, WorktreeError> {
    if tips.is_empty() {
        return Ok(0);
    }
    let text = run(git(root)
        .args(["rev-list", "--count"])
        .args(tips)
        .args(["--not", "HEAD"]))?;
    let count = text.trim();
    count.parse().map_err(|_| WorktreeError::Git {
        command: "rev-list --count".to_string(),
        status: "unexpected output".to_string(),
        stderr: format!("expected a number of commits, got {count:?}"),
    })
}

/// Whether a failure was another git process holding a lock (a `.lock`
/// file that exists), which is worth one more try.
pub(crate) fn is_lock_contention(error: &WorktreeError) -> bool {
    matches!(error, WorktreeError::Git { stderr, .. }
        if stderr.contains(".lock") && stderr.contains("File exists"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_output() {
        let text = "worktree /ws\nHEAD aaa\nbranch refs/heads/main\n\n\
                    worktree /ws/.worktrees/x\nHEAD bbb\nbranch refs/heads/wt/x\n\
                    prunable gitdir file points to non-existent location\n\n\
                    worktree /ws/.worktrees/y\nHEAD ccc\ndetached\nlocked\n\n";
        let listed = parse_porcelain(text);
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[0].branch.as_deref(), Some("main"));
        assert_eq!(listed[1].path, PathBuf::from("/ws/.worktrees/x"));
        assert_eq!(listed[1].branch.as_deref(), Some("wt/x"));
        assert!(listed[1].prunable.is_some());
        assert_eq!(listed[2].head.as_deref(), Some("ccc"));
        assert_eq!(listed[2].branch, None);
    }
}
