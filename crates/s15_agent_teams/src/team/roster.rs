//! Who is on the team: each teammate's role, status and last activity.
//!
//! The course's users could not list their teammates; here the roster is
//! one shared table that the runtime updates as each teammate moves
//! between working, idle and shut down, and `list_teammates` reads.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use shared::sync::LockExt;

/// Where a teammate is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Running a turn on an assignment.
    Working,
    /// Waiting for its mailbox.
    Idle,
    /// Its plan is waiting for the lead's approval; mutating tools are
    /// blocked until then.
    AwaitingApproval,
    /// It accepted a shutdown request and stopped.
    ShutDown,
    /// Its task ended unexpectedly (a panic) or was stopped at exit.
    Stopped(String),
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Working => f.write_str("working"),
            Self::Idle => f.write_str("idle"),
            Self::AwaitingApproval => f.write_str("awaiting plan approval"),
            Self::ShutDown => f.write_str("shut down"),
            Self::Stopped(why) => write!(f, "stopped ({why})"),
        }
    }
}

/// One teammate as the roster knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub name: String,
    pub role: String,
    pub status: Status,
    /// What it did last, in a few words.
    pub activity: String,
    /// When that was, in seconds since the Unix epoch.
    pub at: f64,
}

impl Member {
    /// `auth (authentication): idle — sent its result, 3 s ago`
    pub fn line(&self, now: f64) -> String {
        let ago = (now - self.at).max(0.0);
        format!(
            "{} ({}): {} — {}, {} ago",
            self.name,
            self.role,
            self.status,
            self.activity,
            human_age(ago)
        )
    }

    /// Whether it can still take work.
    pub fn is_alive(&self) -> bool {
        !matches!(self.status, Status::ShutDown | Status::Stopped(_))
    }
}

/// The shared table of teammates. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    members: Arc<Mutex<BTreeMap<String, Member>>>,
}

impl Roster {
    /// Adds a teammate; `false` if the name is taken by one still alive.
    pub fn join(&self, name: &str, role: &str) -> bool {
        let mut members = self.members();
        if members.get(name).is_some_and(Member::is_alive) {
            return false;
        }
        members.insert(
            name.to_string(),
            Member {
                name: name.to_string(),
                role: role.to_string(),
                status: Status::Working,
                activity: "spawned".to_string(),
                at: now(),
            },
        );
        true
    }

    /// Records a teammate's new status and what it just did.
    pub fn update(&self, name: &str, status: Status, activity: impl Into<String>) {
        if let Some(member) = self.members().get_mut(name) {
            member.status = status;
            member.activity = activity.into();
            member.at = now();
        }
    }

    /// One teammate.
    pub fn get(&self, name: &str) -> Option<Member> {
        self.members().get(name).cloned()
    }

    /// Every teammate, by name.
    pub fn list(&self) -> Vec<Member> {
        self.members().values().cloned().collect()
    }

    fn members(&self) -> MutexGuard<'_, BTreeMap<String, Member>> {
        self.members.locked()
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

/// `4 s`, `3 min`, `2 h`.
fn human_age(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{} s", seconds.round())
    } else if seconds < 3_600.0 {
        format!("{} min", (seconds / 60.0).round())
    } else {
        format!("{} h", (seconds / 3_600.0).round())
    }
}
