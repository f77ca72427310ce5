//! One task: what it asks for, who is working on it, what it waits for.
//!
//! A task is stored as one JSON file, `.tasks/<id>.json`, in the shape the
//! course uses (note the camel-cased `blockedBy`):
//!
//! ```text
//! {"id": "2", "subject": "create API endpoints", "description": "",
//!  "status": "pending", "owner": null, "blockedBy": ["1"]}
//! ```
//!
//! Ids are short and sequential (`1`, `2`, …), so a person and a model can
//! both say "task 2". Every id that comes from outside — a tool call, a
//! `blockedBy` list, a file name — is checked by [`validate_id`] before it
//! is used in a path, so no id can name a file outside `.tasks/`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The longest id accepted.
pub const MAX_ID_CHARS: usize = 64;

// ANCHOR: task
/// Where a task is in its life: `pending` until claimed, `in_progress`
/// while its owner works on it, `completed` for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

/// One task of the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    pub status: Status,
    /// Who claimed it; `None` until then.
    #[serde(default)]
    pub owner: Option<String>,
    /// The tasks that must be completed before this one can be claimed.
    #[serde(rename = "blockedBy", default)]
    pub blocked_by: Vec<String>,
    /// Lesson 16: until when (seconds since the Unix epoch) the owner's
    /// claim holds without being renewed. A teammate renews it while it
    /// works; one that dies stops renewing, and once the time has passed
    /// the task can be claimed again. `None`: the claim never expires (a
    /// claim made by hand with `claim_task`).
    #[serde(
        rename = "leaseUntil",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub lease_until: Option<u64>,
}
// ANCHOR_END: task

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
        })
    }
}

impl Task {
    /// One line for listings: a box for the status, the id, the subject,
    /// the owner and what it still waits for.
    pub fn line(&self, waiting_for: &[String]) -> String {
        let mark = match self.status {
            Status::Pending => "[ ]",
            Status::InProgress => "[>]",
            Status::Completed => "[x]",
        };
        let mut line = format!("{mark} {}: {}", self.id, self.subject);
        if let Some(owner) = &self.owner {
            line.push_str(&format!(" (owner: {owner})"));
        }
        if !waiting_for.is_empty() {
            line.push_str(&format!(" (blocked by: {})", waiting_for.join(", ")));
        }
        line
    }
}

// ANCHOR: validate_id
/// Accepts ids of 1 to [`MAX_ID_CHARS`] ASCII letters, digits, `-` and
/// `_`: enough for any id this board makes or a person writes by hand, and
/// nothing that can climb out of a directory (`/`, `.`, `\`).
pub fn validate_id(id: &str) -> Result<(), InvalidTaskId> {
    let valid = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    if valid {
        Ok(())
    } else {
        Err(InvalidTaskId(id.to_string()))
    }
}

/// An id [`validate_id`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a task id: ids are 1 to {max} letters, digits, `-` or `_`",
    max = MAX_ID_CHARS
)]
pub struct InvalidTaskId(pub String);
// ANCHOR_END: validate_id

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_leave_the_directory_are_refused() {
        for bad in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "a.json",
            "x\\y",
            &"9".repeat(65),
        ] {
            assert!(validate_id(bad).is_err(), "{bad}");
        }
        for good in ["1", "42", "task_1700000000_ab12", "setup-schema"] {
            assert!(validate_id(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn the_file_format_is_the_courses() {
        let task = Task {
            id: "2".into(),
            subject: "create API endpoints".into(),
            description: String::new(),
            status: Status::InProgress,
            owner: Some("alice".into()),
            blocked_by: vec!["1".into()],
            lease_until: None,
        };
        let json = serde_json::to_value(&task).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"id": "2", "subject": "create API endpoints", "description": "",
                "status": "in_progress", "owner": "alice", "blockedBy": ["1"]})
        );
        let back: Task = serde_json::from_value(json).unwrap();
        assert_eq!(back, task);
    }
}
