//! One message between agents, as it is stored: a single line of JSON.
//!
//! The format follows the course — `from`, `to`, `type`, `content`, plus
//! `request_id` and `approve` for protocol messages — with two additions:
//! an `id`, unique across processes and restarts, so a consumer can drop a
//! message it has already handled when a crash makes the mailbox deliver it
//! again, and `ts`, the sending time in seconds since the Unix epoch.
//!
//! Agent names become file names (`.mailboxes/<name>.jsonl`), so they are
//! checked before anything touches the disk: `../x` must not write outside
//! the mailbox directory, and `a.lock` must not collide with a lock file.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The longest agent name allowed.
pub const MAX_NAME_LEN: usize = 32;

/// What a message is for, stored under the key `"type"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// Ordinary text from one agent to another.
    Message,
    /// The same text sent to several agents (one copy each).
    Broadcast,
    /// A teammate's report of finished work.
    Result,
    /// A teammate telling the lead it has nothing left to do.
    IdleNotification,
    /// The lead asking a teammate to stop.
    ShutdownRequest,
    /// A teammate agreeing to stop, or refusing.
    ShutdownResponse,
    /// The lead asking a teammate for a plan (`request_plan`); the plan
    /// comes back as a `plan_approval_request`.
    PlanRequest,
    /// A teammate asking the lead to approve its plan.
    PlanApprovalRequest,
    /// The lead approving or rejecting a plan.
    PlanApprovalResponse,
}

impl MessageKind {
    /// The name used in the JSON (`"shutdown_request"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Broadcast => "broadcast",
            Self::Result => "result",
            Self::IdleNotification => "idle_notification",
            Self::ShutdownRequest => "shutdown_request",
            Self::ShutdownResponse => "shutdown_response",
            Self::PlanRequest => "plan_request",
            Self::PlanApprovalRequest => "plan_approval_request",
            Self::PlanApprovalResponse => "plan_approval_response",
        }
    }
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One message, exactly as it is stored in a mailbox line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique across processes and restarts (see [`new_id`]).
    pub id: String,
    /// The sending agent.
    pub from: String,
    /// The receiving agent, whose mailbox holds the line.
    pub to: String,
    /// What the message is for.
    #[serde(rename = "type")]
    pub kind: MessageKind,
    /// The text: the message itself, a plan, or a response's feedback.
    pub content: String,
    /// For protocol messages: the request this one opens or answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// For protocol responses: yes or no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<bool>,
    /// When it was sent, in seconds since the Unix epoch.
    pub ts: f64,
}

impl Message {
    /// A new message with a fresh id, stamped now. Both names are checked,
    /// since they will name files.
    pub fn new(
        from: &str,
        to: &str,
        kind: MessageKind,
        content: impl Into<String>,
    ) -> Result<Self, NameError> {
        validate_name(from)?;
        validate_name(to)?;
        Ok(Self {
            id: new_id(),
            from: from.to_string(),
            to: to.to_string(),
            kind,
            content: content.into(),
            request_id: None,
            approve: None,
            ts: now_secs(),
        })
    }

    /// The same message, opening or answering request `request_id`.
    #[must_use]
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The same message, carrying a response's yes or no.
    #[must_use]
    pub fn with_approve(mut self, approve: bool) -> Self {
        self.approve = Some(approve);
        self
    }

    /// The message as one mailbox line: compact JSON and a newline. JSON
    /// escapes newlines inside strings, so the only newline is the last.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        let mut line = serde_json::to_string(self)?;
        line.push('\n');
        Ok(line)
    }
}

/// Why an agent name was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameError {
    #[error("agent name is empty; use 1 to {MAX_NAME_LEN} letters, digits, `_` or `-`")]
    Empty,
    #[error("agent name `{name}` is {len} characters long; the limit is {MAX_NAME_LEN}")]
    TooLong { name: String, len: usize },
    #[error(
        "agent name `{name}` contains {found:?}; use only letters, digits, `_` and `-` \
         (the name becomes a file name)"
    )]
    BadChar { name: String, found: char },
}

// ANCHOR: validate_name
/// Checks that `name` matches `[A-Za-z0-9_-]{1,32}`, so it is safe as a
/// file name: no separators, no dots, nothing a shell would mangle.
pub fn validate_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some(found) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(NameError::BadChar {
            name: name.to_string(),
            found,
        });
    }
    // Every character is ASCII by now, so bytes count characters.
    if name.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong {
            name: name.to_string(),
            len: name.len(),
        });
    }
    Ok(())
}
// ANCHOR_END: validate_name

/// A fresh message id: `msg-<pid>-<microseconds>-<counter>`.
///
/// The process id keeps two live processes apart, the counter keeps two
/// messages of one process apart, and the time keeps a later process that
/// reuses a pid apart from an earlier one.
pub fn new_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros());
    format!(
        "msg-{}-{micros}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Seconds since the Unix epoch, with a fraction (the course's `time.time()`).
fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}
