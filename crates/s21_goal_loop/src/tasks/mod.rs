//! The task system: a persistent board of tasks with dependencies.
//!
//! lesson 5's todo list lives in memory and is one agent's plan for one
//! job. The task board lives on disk, in `.tasks/`, one JSON file per task,
//! so it survives the session and can be shared: later lessons let several
//! agents claim tasks from the same board. A task waits for the tasks in
//! its `blockedBy` list; it can be claimed only once they are completed.
//!
//! ```text
//! create_task ─► pending ──claim_task──► in_progress ──complete_task──► completed
//!                   ▲  (all blockedBy completed,                 │
//!                   │   nobody else has it)                      └─► "Unblocked: …"
//! ```
//!
//! * [`task`]: the task and its file format; id validation.
//! * [`store`]: the directory, written atomically, read defensively.
//! * [`lock`]: the file lock that makes every read-check-write atomic
//!   across threads and processes.
//! * [`board`]: create (with dependency and cycle checks), claim, complete.
//! * [`lease`]: claims that expire unless renewed, for autonomous
//!   teammates (lesson 16).
//! * [`tools`]: the five tools in the dispatch map.

pub mod board;
pub mod lease;
pub mod lock;
pub mod store;
pub mod task;
pub mod tools;

pub use board::{Refusal, TASKS_TAG, TaskBoard};
pub use lease::Leased;
pub use store::TASKS_DIR;
pub use task::{Status, Task};
