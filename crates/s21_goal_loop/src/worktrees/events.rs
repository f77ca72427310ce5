//! The event log, `.worktrees/events.jsonl`: one JSON object per line for
//! every worktree that was created, removed or kept.
//!
//! ```text
//! {"type":"create","worktree":"auth","task_id":"3","ts":1767225600.25}
//! {"type":"keep","worktree":"auth","task_id":"3","ts":1767229200.5}
//! ```
//!
//! An event is written only after git did what it describes, so the log is
//! a record of what happened, not of what was attempted. Lines are only
//! ever appended, each with a single write to a file opened with
//! `O_APPEND`: the system puts each write at the end of the file, so lines
//! from two writers never overwrite or split each other.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The event log, in `.worktrees/`.
pub const EVENTS_FILE: &str = "events.jsonl";

/// What happened to a worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Create,
    Remove,
    Keep,
}

// ANCHOR: event
/// One line of the event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// The worktree's name.
    pub worktree: String,
    /// The task it is bound to; empty when none.
    #[serde(default)]
    pub task_id: String,
    /// When, in seconds since the Unix epoch.
    pub ts: f64,
}
// ANCHOR_END: event

impl Event {
    /// An event that happens now.
    pub(crate) fn now(kind: EventKind, worktree: &str, task_id: Option<&str>) -> Self {
        // A clock before 1970 is broken, not a reason to fail: log 0.
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |elapsed| elapsed.as_secs_f64());
        Self {
            kind,
            worktree: worktree.to_string(),
            task_id: task_id.unwrap_or_default().to_string(),
            ts,
        }
    }
}

/// Appends `event` to the log at `path` as one line, in one write.
pub(crate) fn append(path: &Path, event: &Event) -> io::Result<()> {
    let mut line = serde_json::to_string(event).map_err(io::Error::other)?;
    line.push('\n');
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(line.as_bytes())
}

/// Every event in the log at `path`, oldest first. A missing log has no
/// events; a line that is not an event (cut short by a crash, edited by
/// hand) is skipped, so one bad line does not hide the rest.
pub(crate) fn read(path: &Path) -> Vec<Event> {
    let Ok(text) = fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
