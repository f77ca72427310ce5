//! The operations on the board, each one read-check-write under the
//! board's lock: create, claim, complete (and the read-only list and get).
//!
//! A refusal is not a failure of the harness: it is a [`Refusal`] whose
//! text tells the model what stands in the way (the owner, the blocking
//! tasks, the cycle), and the tool returns it as an `is_error` result.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use shared::notice::Notices;

use super::lock::BoardLock;
use super::store::{Skipped, TaskStore, next_id};
use super::task::{InvalidTaskId, Status, Task, validate_id};

/// The tag of the board's notices.
pub const TASKS_TAG: &str = "tasks";

/// Why the board refused an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not an id the board can look up.
    InvalidId(InvalidTaskId),
    /// No task with this id.
    NotFound(String),
    /// A dependency named at creation does not exist.
    UnknownDependency { id: String, known: Vec<String> },
    /// Creating the task would make it wait on a cycle.
    Cycle(Vec<String>),
    /// Someone has it already (or it is done).
    Taken {
        id: String,
        status: Status,
        owner: Option<String>,
    },
    /// Some dependencies are not completed (or do not exist).
    Blocked { id: String, blockers: Vec<String> },
    /// `complete_task` on a task nobody claimed.
    NotClaimed(String),
    /// `complete_task` by an agent that does not own the task (lesson 15:
    /// agents have names). `force` says whether the caller may override.
    NotOwner {
        id: String,
        owner: Option<String>,
        caller: String,
        force: bool,
    },
    /// The file system failed.
    Io(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidId(reason) => write!(f, "{reason}"),
            Self::NotFound(id) => write!(f, "There is no task {id}; list_tasks shows the board."),
            Self::UnknownDependency { id, known } => write!(
                f,
                "blockedBy names task {id}, which does not exist; the tasks are: {}",
                if known.is_empty() {
                    "(none yet)".to_string()
                } else {
                    known.join(", ")
                }
            ),
            Self::Cycle(path) => write!(
                f,
                "These dependencies would form a cycle, so no task in it could ever start: {}",
                path.join(" → ")
            ),
            Self::Taken { id, status, owner } => match owner {
                Some(owner) => write!(f, "Task {id} is {status}, claimed by {owner}."),
                None => write!(f, "Task {id} is {status}."),
            },
            Self::Blocked { id, blockers } => write!(
                f,
                "Task {id} cannot start yet; it is blocked by: {}",
                blockers.join("; ")
            ),
            Self::NotClaimed(id) => {
                write!(
                    f,
                    "Task {id} is still pending: claim it before completing it."
                )
            }
            Self::NotOwner {
                id,
                owner,
                caller,
                force,
            } => {
                match owner {
                    Some(owner) => write!(
                        f,
                        "Task {id} is claimed by {owner}, not by {caller}: only {owner} can \
                         complete it."
                    )?,
                    None => write!(f, "Task {id} has no owner, so {caller} cannot complete it.")?,
                }
                if *force {
                    f.write_str(" As the lead, you may complete it anyway with force: true.")?;
                }
                Ok(())
            }
            Self::Io(error) => write!(f, "The task board could not be updated: {error}"),
        }
    }
}

impl std::error::Error for Refusal {}

pub(super) fn io(error: std::io::Error) -> Refusal {
    Refusal::Io(error.to_string())
}

// ANCHOR: board
/// The task board of one workspace: its files, and where it reports.
#[derive(Debug, Clone)]
pub struct TaskBoard {
    pub(super) store: TaskStore,
    pub(super) notices: Notices,
}
// ANCHOR_END: board

impl TaskBoard {
    /// The board in `dir`, reporting skipped files and changes to `notices`.
    pub fn new(dir: impl Into<std::path::PathBuf>, notices: Notices) -> Self {
        Self {
            store: TaskStore::at(dir),
            notices,
        }
    }

    /// The board's directory.
    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// Every readable task, in id order. Unreadable files are reported and
    /// skipped.
    pub fn list(&self) -> Vec<Task> {
        let (tasks, skipped) = self.store.scan();
        self.report(&skipped);
        tasks
    }

    /// One task.
    pub fn get(&self, id: &str) -> Result<Task, Refusal> {
        validate_id(id).map_err(Refusal::InvalidId)?;
        match self.store.load(id) {
            Ok(Some(task)) => Ok(task),
            Ok(None) => Err(Refusal::NotFound(id.to_string())),
            Err(skipped) => {
                self.report(std::slice::from_ref(&skipped));
                Err(Refusal::Io(format!(
                    "{} is unreadable: {}",
                    skipped.file, skipped.reason
                )))
            }
        }
    }

    /// What `task` still waits for: each dependency that is not completed,
    /// described (`1 (pending)`, `3 (missing)`).
    pub fn waiting_for(task: &Task, tasks: &BTreeMap<&str, &Task>) -> Vec<String> {
        task.blocked_by
            .iter()
            .filter_map(|dep| match tasks.get(dep.as_str()) {
                Some(dep) if dep.status == Status::Completed => None,
                Some(dep) => Some(match &dep.owner {
                    Some(owner) => format!("{} ({}, {owner})", dep.id, dep.status),
                    None => format!("{} ({})", dep.id, dep.status),
                }),
                None => Some(format!("{dep} (missing)")),
            })
            .collect()
    }

    fn report(&self, skipped: &[Skipped]) {
        for problem in skipped {
            self.notices.emit(
                TASKS_TAG,
                format!(
                    "warning: skipping unreadable task file {}/{}: {}",
                    self.dir().display(),
                    problem.file,
                    problem.reason
                ),
            );
        }
    }

    /// Takes the lock, then reads the whole board.
    pub(super) fn locked(&self) -> Result<(BoardLock, Vec<Task>), Refusal> {
        let lock = BoardLock::acquire(self.dir()).map_err(io)?;
        Ok((lock, self.list()))
    }
}

// ANCHOR: create
impl TaskBoard {
    /// Creates a pending task with the next free id: after every id a file
    /// in the directory holds, readable or not. Every dependency must
    /// exist, and none may lead back into a cycle.
    pub fn create(
        &self,
        subject: &str,
        description: &str,
        blocked_by: &[String],
    ) -> Result<Task, Refusal> {
        for dep in blocked_by {
            validate_id(dep).map_err(Refusal::InvalidId)?;
        }
        let (_lock, tasks) = self.locked()?;
        let by_id: BTreeMap<&str, &Task> =
            tasks.iter().map(|task| (task.id.as_str(), task)).collect();
        if let Some(missing) = blocked_by
            .iter()
            .find(|dep| !by_id.contains_key(dep.as_str()))
        {
            return Err(Refusal::UnknownDependency {
                id: missing.clone(),
                known: tasks.iter().map(|task| task.id.clone()).collect(),
            });
        }
        // Every file present holds its id, even one that cannot be read:
        // a person may repair it, and it must not be replaced.
        let taken = self.store.taken_ids().map_err(io)?;
        let mut task = Task {
            id: next_id(&taken),
            subject: subject.trim().to_string(),
            description: description.trim().to_string(),
            status: Status::Pending,
            owner: None,
            lease_until: None,
            // Named twice is the same dependency.
            blocked_by: blocked_by
                .iter()
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        };
        if let Some(cycle) = find_cycle(&task, &by_id) {
            return Err(Refusal::Cycle(cycle));
        }
        // Created, never replaced: a name taken behind the lock's back (by
        // hand, or by a process that ignores the lock) means the next id.
        loop {
            match self.store.create(&task) {
                Ok(()) => break,
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    task.id = next_id(&[task.id.as_str()]);
                }
                Err(error) => return Err(io(error)),
            }
        }
        self.notices
            .emit(TASKS_TAG, format!("created {}: {}", task.id, task.subject));
        Ok(task)
    }
}

/// A cycle reachable from `new` through `blockedBy`, as the path that
/// closes it (`a → b → a`), if there is one. A fresh task has no
/// dependents, so a cycle through it is only possible if it names itself;
/// but the files are also edited by hand and by other sessions, and a task
/// that waits on a cycle could never start.
fn find_cycle(new: &Task, tasks: &BTreeMap<&str, &Task>) -> Option<Vec<String>> {
    // ANCHOR: exercise-s12-cycle
    fn visit<'a>(
        id: &'a str,
        deps_of: &dyn Fn(&str) -> Option<&'a [String]>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|on_path| *on_path == id) {
            let mut cycle: Vec<String> = path[start..].iter().map(ToString::to_string).collect();
            cycle.push(id.to_string());
            return Some(cycle);
        }
        if !done.insert(id) {
            return None;
        }
        path.push(id);
        for dep in deps_of(id).unwrap_or_default() {
            if let Some(cycle) = visit(dep, deps_of, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let deps_of = |id: &str| -> Option<&[String]> {
        if id == new.id {
            Some(&new.blocked_by)
        } else {
            tasks.get(id).map(|task| task.blocked_by.as_slice())
        }
    };
    visit(&new.id, &deps_of, &mut Vec::new(), &mut BTreeSet::new())
    // ANCHOR_END: exercise-s12-cycle
}
// ANCHOR_END: create

// ANCHOR: claim
impl TaskBoard {
    /// Gives a pending task whose dependencies are all completed to
    /// `owner`. Under the lock, so of any number of claimers — threads or
    /// processes — exactly one wins each task.
    pub fn claim(&self, id: &str, owner: &str) -> Result<Task, Refusal> {
        validate_id(id).map_err(Refusal::InvalidId)?;
        let (_lock, tasks) = self.locked()?;
        let by_id: BTreeMap<&str, &Task> =
            tasks.iter().map(|task| (task.id.as_str(), task)).collect();
        let Some(task) = by_id.get(id) else {
            return Err(Refusal::NotFound(id.to_string()));
        };
        if task.status != Status::Pending {
            return Err(Refusal::Taken {
                id: id.to_string(),
                status: task.status,
                owner: task.owner.clone(),
            });
        }
        let blockers = Self::waiting_for(task, &by_id);
        if !blockers.is_empty() {
            return Err(Refusal::Blocked {
                id: id.to_string(),
                blockers,
            });
        }
        let claimed = Task {
            status: Status::InProgress,
            owner: Some(owner.to_string()),
            ..(*task).clone()
        };
        self.store.save(&claimed).map_err(io)?;
        self.notices.emit(
            TASKS_TAG,
            format!("{owner} claimed {}: {}", claimed.id, claimed.subject),
        );
        Ok(claimed)
    }
}
// ANCHOR_END: claim

// ANCHOR: complete
impl TaskBoard {
    /// Marks a claimed task completed, and returns it with the tasks this
    /// unblocked: pending ones that waited for it and now wait for nothing.
    pub fn complete(&self, id: &str) -> Result<(Task, Vec<Task>), Refusal> {
        self.complete_checked(id, |_| Ok(()))
    }

    /// [`TaskBoard::complete`], once `may_complete` accepts the claimed
    /// task: it runs under the board's lock, so the owner it checks is the
    /// owner the task has when it is completed (see [`super::tools::Caller`]).
    pub fn complete_checked(
        &self,
        id: &str,
        may_complete: impl FnOnce(&Task) -> Result<(), Refusal>,
    ) -> Result<(Task, Vec<Task>), Refusal> {
        validate_id(id).map_err(Refusal::InvalidId)?;
        let (_lock, mut tasks) = self.locked()?;
        let Some(index) = tasks.iter().position(|task| task.id == id) else {
            return Err(Refusal::NotFound(id.to_string()));
        };
        match tasks[index].status {
            Status::Pending => return Err(Refusal::NotClaimed(id.to_string())),
            Status::Completed => {
                return Err(Refusal::Taken {
                    id: id.to_string(),
                    status: Status::Completed,
                    owner: tasks[index].owner.clone(),
                });
            }
            Status::InProgress => may_complete(&tasks[index])?,
        }
        tasks[index].status = Status::Completed;
        // A finished task needs nobody to hold it any more (lesson 16).
        tasks[index].lease_until = None;
        self.store.save(&tasks[index]).map_err(io)?;
        let by_id: BTreeMap<&str, &Task> =
            tasks.iter().map(|task| (task.id.as_str(), task)).collect();
        let unblocked: Vec<Task> = tasks
            .iter()
            .filter(|task| {
                task.status == Status::Pending
                    && task.blocked_by.iter().any(|dep| dep == id)
                    && Self::waiting_for(task, &by_id).is_empty()
            })
            .cloned()
            .collect();
        let done = tasks[index].clone();
        self.notices.emit(
            TASKS_TAG,
            format!("completed {}: {}", done.id, done.subject),
        );
        Ok((done, unblocked))
    }
}
// ANCHOR_END: complete
