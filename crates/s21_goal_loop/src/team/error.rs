//! What can go wrong on the bus, each with a message that says which agent
//! and which file, so an agent (or a student) reading it knows what to fix.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use super::message::NameError;

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
