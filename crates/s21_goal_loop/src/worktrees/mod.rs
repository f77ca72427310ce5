//! Worktree isolation: each task gets its own git worktree, so agents
//! working on different tasks never edit the same files.
//!
//! The task board (lesson 12) says *what* each agent works on; nothing yet
//! says *where*. Two teammates editing the same checkout overwrite each
//! other's files and see each other's half-finished changes in every
//! `git diff`. A git worktree is a second (third, …) checkout of the same
//! repository, in its own directory, on its own branch, sharing the
//! history. One worktree per task gives every task a private copy of the
//! project; its work comes back as a branch to review and merge.
//!
//! ```text
//! workspace/                  main checkout, on main
//!   .worktrees/auth/          worktree `auth`, on wt/auth, bound to task 3
//!   .worktrees/docs/          worktree `docs`, on wt/docs
//! ```
//!
//! * [`name`]: which names are allowed, and why.
//! * `git` (private): the git commands, run with the real `git` program.
//! * [`store`]: the bindings file, the lock, the `.gitignore`.
//! * [`events`]: the append-only event log.
//! * [`manager`]: create, list, keep and remove, put together.
//! * [`worktree`]: what the manager reports.
//! * [`error`]: what can go wrong, in messages the model can act on.
//! * [`tools`]: the lead's four tools.

pub mod error;
pub mod events;
mod git;
pub mod manager;
pub mod name;
pub mod store;
pub mod tools;
pub mod worktree;

pub use error::{Taken, WorktreeError};
pub use events::{Event, EventKind};
pub use manager::{WORKTREES_DIR, WorktreeManager};
pub use name::{BRANCH_PREFIX, MAX_NAME_CHARS, branch_for, validate_name};
pub use worktree::{BoundWorktree, Removed, Worktree};
