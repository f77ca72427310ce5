//! The worktree manager: create, list, keep and remove the worktrees under
//! `.worktrees/`, and find the one bound to a task.
//!
//! Every change follows the same order: check everything that can be
//! checked, let git make the change, and only then write down what
//! happened (the binding, the event). A failure before git leaves nothing
//! behind; a failure after git says that git's part happened, so the model
//! does not try it again.

use std::fs;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use super::error::{Taken, WorktreeError};
use super::events::{self, EVENTS_FILE, Event, EventKind};
use super::git::{self, Listed};
use super::name::{branch_for, validate_name};
use super::store::{self, BINDINGS_FILE, DirLock, Record, Records};
use super::worktree::{BoundWorktree, Removed, Worktree};

/// The directory, relative to the workspace root, that holds the
/// worktrees and the manager's files.
pub const WORKTREES_DIR: &str = ".worktrees";

/// The pause before the one retry when another git process held a lock.
const LOCK_RETRY_DELAY: Duration = Duration::from_millis(200);

// ANCHOR: manager
/// The worktrees of one workspace, kept in `<root>/.worktrees/`.
///
/// The manager holds no state of its own: everything is on disk or in
/// git, so any number of managers (threads, processes, a restarted
/// session) can work on the same workspace.
#[derive(Debug, Clone)]
pub struct WorktreeManager {
    root: PathBuf,
    dir: PathBuf,
}
// ANCHOR_END: manager

impl WorktreeManager {
    /// The manager for the workspace at `root`, which should be (inside) a
    /// git repository. Cheap: nothing is checked until an operation runs.
    pub fn new(root: &Path) -> Self {
        // Made absolute because git runs with `-C <root>` and would read a
        // relative worktree path as relative to the root a second time.
        // `absolute` reads the current directory and nothing else.
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let dir = root.join(WORKTREES_DIR);
        Self { root, dir }
    }

    /// The workspace root (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/.worktrees`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    // ANCHOR: create
    /// Creates the worktree `name` at `.worktrees/<name>`, on a new branch
    /// `wt/<name>` starting at the main checkout's `HEAD`, and binds it to
    /// `task_id` if given (an empty id means none).
    pub fn create(&self, name: &str, task_id: Option<&str>) -> Result<Worktree, WorktreeError> {
        validate_name(name)?;
        let task_id = task_id.filter(|id| !id.is_empty());
        self.check_workspace()?;
        git::check_has_commit(&self.root)?;
        let _lock = self.lock()?;

        let path = self.dir.join(name);
        let branch = branch_for(name);
        if let Some(taken) = self.taken(name, &path, &branch)? {
            return Err(WorktreeError::NameTaken {
                name: name.to_string(),
                taken,
            });
        }
        let (mut records, _) = store::load(&self.dir);
        if let Some(task_id) = task_id {
            // One worktree per task, so "where does task 3 happen?" has one
            // answer. A binding whose directory is gone no longer counts.
            let bound = records.iter().find(|(other, record)| {
                record.task_id.as_deref() == Some(task_id) && self.dir.join(other).is_dir()
            });
            if let Some((other, _)) = bound {
                return Err(WorktreeError::TaskAlreadyBound {
                    task_id: task_id.to_string(),
                    worktree: other.clone(),
                });
            }
        }

        self.add(&path, &branch)?;

        // Forget stale bindings of the same task, then bind it here.
        records.retain(|_, record| task_id.is_none() || record.task_id.as_deref() != task_id);
        records.insert(
            name.to_string(),
            Record {
                task_id: task_id.map(str::to_string),
                kept: false,
            },
        );
        let event = Event::now(EventKind::Create, name, task_id);
        self.record(
            &records,
            &event,
            &format!("the worktree `{name}` was created, but "),
        )?;
        Ok(Worktree {
            name: name.to_string(),
            path,
            branch: Some(branch),
            task_id: task_id.map(str::to_string),
            kept: false,
            uncommitted: 0,
            unmerged_commits: 0,
            missing: None,
        })
    }
    // ANCHOR_END: create

    /// The worktrees under `.worktrees/`, by name, as git lists them
    /// (`git worktree list --porcelain`), each with its binding and what
    /// removing it would lose. One whose directory vanished is listed too,
    /// with [`Worktree::missing`] set: git still holds its branch, and the
    /// user needs to know it is there to clean it up.
    pub fn list(&self) -> Result<Vec<Worktree>, WorktreeError> {
        if !self.root.is_dir() {
            return Err(self.no_workspace());
        }
        let (records, _) = store::load(&self.dir);
        let mut worktrees = self
            .ours()?
            .into_iter()
            .map(|(name, listed)| self.describe(name, &listed, &records))
            .collect::<Result<Vec<_>, _>>()?;
        worktrees.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(worktrees)
    }

    // ANCHOR: remove
    /// Removes the worktree `name` and deletes its branch `wt/<name>`.
    ///
    /// Refuses if that would lose work (uncommitted changes, untracked
    /// files, commits the main checkout's `HEAD` does not have), unless
    /// `discard_changes` is set.
    pub fn remove(&self, name: &str, discard_changes: bool) -> Result<Removed, WorktreeError> {
        validate_name(name)?;
        self.check_workspace()?;
        let _lock = self.lock()?;
        let listed = self.find(name)?;
        let (mut records, _) = store::load(&self.dir);
        let worktree = self.describe(name.to_string(), &listed, &records)?;
        if !discard_changes && (worktree.uncommitted > 0 || worktree.unmerged_commits > 0) {
            return Err(WorktreeError::WouldLoseWork {
                name: name.to_string(),
                uncommitted: worktree.uncommitted,
                unmerged_commits: worktree.unmerged_commits,
            });
        }

        // `--force` only when discarding: without it git refuses by itself
        // if changes appeared since we looked (a teammate still at work),
        // so a removal we judged safe stays safe.
        git::remove_worktree(&self.root, &listed.path, discard_changes)?;
        // The worktree is gone now, whatever happens to the branch, so it
        // is recorded before a failure to delete the branch is reported.
        let branch = branch_for(name);
        let deleted = match git::branch_exists(&self.root, &branch) {
            Ok(true) => git::delete_branch(&self.root, &branch).map(|()| Some(branch)),
            Ok(false) => Ok(None),
            Err(error) => Err(error),
        };
        let record = records.remove(name).unwrap_or_default();
        let event = Event::now(EventKind::Remove, name, record.task_id.as_deref());
        self.record(
            &records,
            &event,
            &format!("the worktree `{name}` was removed, but "),
        )?;
        Ok(Removed {
            name: name.to_string(),
            branch: deleted?,
            task_id: record.task_id,
            discarded_changes: worktree.uncommitted,
            discarded_commits: worktree.unmerged_commits,
        })
    }
    // ANCHOR_END: remove

    /// Marks the worktree `name` as kept for review and returns it: its
    /// [`Worktree::branch`] is what a person should look at and merge.
    pub fn keep(&self, name: &str) -> Result<Worktree, WorktreeError> {
        validate_name(name)?;
        self.check_workspace()?;
        let _lock = self.lock()?;
        let listed = self.find(name)?;
        let (mut records, _) = store::load(&self.dir);
        let record = records.entry(name.to_string()).or_default();
        record.kept = true;
        let event = Event::now(EventKind::Keep, name, record.task_id.as_deref());
        self.record(
            &records,
            &event,
            &format!("while keeping the worktree `{name}`, "),
        )?;
        self.describe(name.to_string(), &listed, &records)
    }

    /// The directory of the worktree `name`, if it exists. Does not run
    /// git, so it is cheap enough to call before every tool call.
    pub fn path_of(&self, name: &str) -> Option<PathBuf> {
        validate_name(name).ok()?;
        let path = self.dir.join(name);
        path.is_dir().then_some(path)
    }

    // ANCHOR: bound_to
    /// The worktree bound to `task_id`, if any: a teammate that claims the
    /// task runs its tools in [`BoundWorktree::path`]. Reads only the
    /// bindings file. The path is returned even if its directory has
    /// vanished, so the caller fails loudly there rather than quietly
    /// working in the main checkout.
    pub fn bound_to(&self, task_id: &str) -> Option<BoundWorktree> {
        // ANCHOR: exercise-s17-bound_to
        let (records, _) = store::load(&self.dir);
        records
            .into_iter()
            .find(|(_, record)| record.task_id.as_deref() == Some(task_id))
            .map(|(name, _)| BoundWorktree {
                path: self.dir.join(&name),
                name,
            })
        // ANCHOR_END: exercise-s17-bound_to
    }
    // ANCHOR_END: bound_to

    // ANCHOR: released
    /// Whether the lead has let the worktree `name` go: `Some(Keep)` or
    /// `Some(Remove)` when that is the last thing done to it, `None` while
    /// it stands as created (or nothing is known of it). A teammate that
    /// worked there stays there until then. Reads only the event log,
    /// which holds what git did and nothing it refused, so a directory that
    /// vanished by itself is not a release: the teammate's tools fail
    /// there, loudly, instead of quietly moving to the main checkout.
    pub fn released(&self, name: &str) -> Option<EventKind> {
        self.events()
            .into_iter()
            .rev()
            .find(|event| event.worktree == name)
            .map(|event| event.kind)
            .filter(|kind| *kind != EventKind::Create)
    }
    // ANCHOR_END: released

    /// Every event in `.worktrees/events.jsonl`, oldest first, skipping
    /// lines that cannot be read.
    pub fn events(&self) -> Vec<Event> {
        events::read(&self.dir.join(EVENTS_FILE))
    }

    /// Problems with the manager's files that did not stop it working (a
    /// bindings file that could not be read), to show the user.
    pub fn problems(&self) -> Vec<String> {
        store::load(&self.dir).1.into_iter().collect()
    }

    fn no_workspace(&self) -> WorktreeError {
        WorktreeError::NoWorkspace {
            root: self.root.clone(),
        }
    }

    /// Checks that the root exists and is in a git repository.
    fn check_workspace(&self) -> Result<(), WorktreeError> {
        if !self.root.is_dir() {
            return Err(self.no_workspace());
        }
        git::check_repository(&self.root)
    }

    /// Creates `.worktrees/` if needed and takes its lock.
    fn lock(&self) -> Result<DirLock, WorktreeError> {
        store::ensure_dir(&self.dir)
            .and_then(|()| DirLock::acquire(&self.dir))
            .map_err(|source| WorktreeError::Io {
                context: format!("could not create or lock {}", self.dir.display()),
                source,
            })
    }

    /// The worktrees git lists whose directory is in `.worktrees/`, with
    /// their names.
    fn ours(&self) -> Result<Vec<(String, Listed)>, WorktreeError> {
        // Git reports paths with symbolic links resolved (on macOS, /tmp
        // is really /private/tmp), so compare both spellings of our
        // directory.
        let resolved = fs::canonicalize(&self.root)
            .map(|root| root.join(WORKTREES_DIR))
            .ok();
        let ours = git::list_worktrees(&self.root)?
            .into_iter()
            .filter_map(|listed| {
                let parent = listed.path.parent()?;
                let inside = parent == self.dir || resolved.as_deref() == Some(parent);
                let name = listed.path.file_name()?.to_str()?.to_string();
                inside.then_some((name, listed))
            })
            .collect();
        Ok(ours)
    }

    /// The worktree `name` as git lists it, or an error naming the ones
    /// there are.
    fn find(&self, name: &str) -> Result<Listed, WorktreeError> {
        let ours = self.ours()?;
        let mut existing = Vec::new();
        for (other, listed) in ours {
            if other == name {
                return Ok(listed);
            }
            existing.push(other);
        }
        existing.sort();
        Err(WorktreeError::NotFound {
            name: name.to_string(),
            existing,
        })
    }

    /// What, if anything, already uses `name`.
    fn taken(&self, name: &str, path: &Path, branch: &str) -> Result<Option<Taken>, WorktreeError> {
        if self.ours()?.iter().any(|(other, _)| other == name) {
            return Ok(Some(if path.exists() {
                Taken::Worktree(path.to_path_buf())
            } else {
                Taken::Registered(path.to_path_buf())
            }));
        }
        // Not a worktree, but in the way: `symlink_metadata` so that even a
        // dangling symbolic link counts.
        if fs::symlink_metadata(path).is_ok() {
            return Ok(Some(Taken::Directory(path.to_path_buf())));
        }
        if git::branch_exists(&self.root, branch)? {
            return Ok(Some(Taken::Branch(branch.to_string())));
        }
        Ok(None)
    }

    /// Runs `git worktree add`, once more if another git process held a
    /// lock (the user's own `git` running at that moment), and cleans up
    /// after a failure.
    fn add(&self, path: &Path, branch: &str) -> Result<(), WorktreeError> {
        let mut added = git::add_worktree(&self.root, path, branch);
        if added.as_ref().is_err_and(git::is_lock_contention) {
            self.clean_up_failed_add(branch);
            thread::sleep(LOCK_RETRY_DELAY);
            added = git::add_worktree(&self.root, path, branch);
        }
        if added.is_err() {
            self.clean_up_failed_add(branch);
        }
        added
    }

    /// Deletes the branch a failed `git worktree add -b` may leave behind:
    /// git creates the branch before it checks out the files and does not
    /// delete it when the checkout fails, so the name would stay taken.
    /// The name was free when we checked and we hold the lock, so a branch
    /// of that name is this attempt's. (`git branch -D` refuses to delete
    /// a branch checked out anywhere, so this cannot hurt a worktree.)
    fn clean_up_failed_add(&self, branch: &str) {
        if git::branch_exists(&self.root, branch).unwrap_or(false) {
            // Best effort: the error worth reporting is the add's.
            let _ = git::delete_branch(&self.root, branch);
        }
    }

    /// Looks at one listed worktree: its binding, and what removing it
    /// would lose.
    fn describe(
        &self,
        name: String,
        listed: &Listed,
        records: &Records,
    ) -> Result<Worktree, WorktreeError> {
        let path = self.dir.join(&name);
        let missing = listed
            .prunable
            .clone()
            .or_else(|| (!path.is_dir()).then(|| "its directory is gone".to_string()));
        let uncommitted = match missing {
            Some(_) => 0,
            None => git::uncommitted(&path)?,
        };
        // The commits at risk are those of the worktree's HEAD and of its
        // branch wt/<name>, which removal deletes even if someone checked
        // out something else there.
        let branch = branch_for(&name);
        let mut tips: Vec<String> = listed.head.iter().cloned().collect();
        if listed.branch.as_deref() != Some(branch.as_str())
            && git::branch_exists(&self.root, &branch)?
        {
            tips.push(format!("refs/heads/{branch}"));
        }
        let unmerged_commits = git::commits_not_on_head(&self.root, &tips)?;
        let record = records.get(&name).cloned().unwrap_or_default();
        Ok(Worktree {
            path,
            branch: listed.branch.clone(),
            task_id: record.task_id,
            kept: record.kept,
            uncommitted,
            unmerged_commits,
            missing,
            name,
        })
    }

    /// Writes down a change git has made: the bindings, then the event.
    /// `prefix` says what already happened, so that a failure here is not
    /// mistaken for a failure of the whole operation.
    fn record(&self, records: &Records, event: &Event, prefix: &str) -> Result<(), WorktreeError> {
        let failed = |file: &'static str| {
            move |source| WorktreeError::Io {
                context: format!("{prefix}.worktrees/{file} could not be written"),
                source,
            }
        };
        store::save(&self.dir, records).map_err(failed(BINDINGS_FILE))?;
        events::append(&self.dir.join(EVENTS_FILE), event).map_err(failed(EVENTS_FILE))
    }
}
