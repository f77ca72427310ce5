//! What can go wrong on the bus, each with a message that says which agent
//! and which file, so an agent (or a student) reading it knows what to fix.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use super::message::NameError;
use super::protocol::ProtocolError;
use super::roster::Status;

/// An error of the message bus or of one mailbox.
#[derive(Debug, Error)]
pub enum BusError {
    /// An agent name that cannot be a mailbox.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The file system refused something.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// What the bus was doing ("lock", "append to", ...).
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// The message could not be turned into JSON.
    #[error("could not encode message `{id}` as JSON: {source}")]
    Encode {
        id: String,
        source: serde_json::Error,
    },
    /// A message handed to the wrong mailbox.
    #[error("message `{id}` is addressed to `{to}`, not to `{mailbox}`")]
    Misaddressed {
        id: String,
        to: String,
        mailbox: String,
    },
    /// A message without an id could not be told apart from a redelivery.
    #[error("message from `{from}` to `{to}` has no id; build it with `Message::new`")]
    MissingId { from: String, to: String },
    /// Another consumer holds messages taken from this mailbox and has not
    /// committed them yet.
    #[error(
        "mailbox `{name}` is being drained by another consumer that has not committed yet; \
         a mailbox has one consumer at a time"
    )]
    Busy { name: String },
}

impl BusError {
    /// A closure that wraps an `io::Error` with what was being done, and to
    /// which file, for `map_err`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}

/// Why the team refused what the lead or a teammate asked of it: start a
/// teammate, send a message, open or answer a request. The text is what
/// the model reads after "Not sent: " or "Teammate not started: ".
#[derive(Debug, Error)]
pub enum TeamError {
    /// A name that cannot be an agent's.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The bus could not deliver.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// The request could not be opened or answered.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// A teammate may not take the lead's name.
    #[error("`{0}` is the lead's own name; choose another")]
    LeadsName(&'static str),
    /// The name is taken by a teammate on the team.
    #[error(
        "a teammate named `{0}` is already on the team; choose another name, or send it a \
         message instead"
    )]
    Taken(String),
    /// `all` with nobody else on the team.
    #[error("there are no other teammates")]
    NoOtherTeammates,
    /// A message to oneself.
    #[error("`{0}` is yourself")]
    Yourself(String),
    /// A teammate that has stopped or is stopping.
    #[error("`{name}` is {status}")]
    NotRunning { name: String, status: Status },
    /// A shutdown asked of a teammate that has stopped or is stopping.
    #[error("`{name}` is already {status}")]
    AlreadyStopped { name: String, status: Status },
    /// A name that is not on the team; `team` lists who is.
    #[error("no teammate named `{name}`; {}", describe_team(team))]
    Unknown { name: String, team: Vec<String> },
}

/// The team as an unknown name's error lists it.
fn describe_team(team: &[String]) -> String {
    if team.is_empty() {
        "the team is empty".to_string()
    } else {
        format!("the team is: {}", team.join(", "))
    }
}
