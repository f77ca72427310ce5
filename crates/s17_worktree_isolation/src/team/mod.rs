//! Agent teams: a lead, persistent teammates, and mail between them.
//!
//! Agents talk through files: every agent has a mailbox,
//! `.mailboxes/<team>/<name>.jsonl`, one JSON message per line. The team's
//! name (`--team`, `team` by default) keeps two teams in one workspace
//! apart — two leads both called `lead` would otherwise read each other's
//! mail — and, being chosen rather than generated, it is the same after a
//! restart, so a restarted lead finds the mail its team sent it. Files, not
//! channels, because a channel dies with its process and a file does not:
//! a message that was sent is on disk, whatever happens next. The pieces,
//! from the bottom up:
//!
//! * [`message`] — what a line holds, and which agent names are allowed.
//! * [`mailbox`] — one inbox on disk: appends under a file lock, and a take
//!   that survives a crash between taking messages and handling them.
//! * [`bus`] — [`MessageBus`]: send, take exactly once, and wait for mail
//!   without spinning.
//! * [`protocol`] — requests that expect one answer (shutdown, plan
//!   approval), settled by request id; [`gate`] — the [`PlanGate`] that
//!   keeps a teammate from changing files before its plan is approved.
//! * [`roster`] — who is on the team, and what each is doing.
//! * [`send`] — the lead's name, who a message may go to, and the
//!   `send_message` tool every agent on the team has.
//! * [`teammate`] — a teammate's life on its tokio task.
//! * [`autonomy`] — what an idle teammate does besides waiting: scan the
//!   task board and claim what can start (lesson 16); [`board_tools`] —
//!   the board's tools as a teammate has them.
//! * [`lead`] — the lead's side: spawning, its mailbox, the protocols.
//! * [`tools`] — what the models see.
//! * [`scripts`] — a script per agent, for the demo and the tests.

pub mod autonomy;
pub mod board_tools;
pub mod bus;
mod error;
pub mod gate;
pub mod lead;
pub mod mailbox;
pub mod message;
pub mod protocol;
pub mod roster;
pub mod scripts;
pub mod send;
pub mod teammate;
pub mod tools;

pub use autonomy::{Autonomy, ScanCount};
pub use bus::{Delivery, Drained, MessageBus};
pub use error::{BusError, TeamError};
pub use gate::{PlanGate, PlanStatus};
pub use lead::{TAG_BUS, Team};
pub use mailbox::{Mailbox, Skipped, Taken};
pub use message::{Message, MessageKind, NameError, validate_name};
pub use protocol::{ProtocolError, Protocols, Request, RequestKind, RequestStatus, Transition};
pub use roster::{Member, Roster, Status};
pub use send::{LEAD, post};
pub use teammate::{Shared, Spec};

/// The directory of every team's mailboxes, in the workspace.
pub const MAILBOX_DIR: &str = ".mailboxes";

/// The team's name when none is given.
pub const DEFAULT_TEAM: &str = "team";

// ANCHOR: mailbox_dir
/// The mailbox directory of team `team` in `workspace`:
/// `.mailboxes/<team>/`. The name is checked like an agent's, so it is
/// one plain path component.
pub fn mailbox_dir(
    workspace: &std::path::Path,
    team: &str,
) -> Result<std::path::PathBuf, NameError> {
    validate_name(team)?;
    Ok(workspace.join(MAILBOX_DIR).join(team))
}
// ANCHOR_END: mailbox_dir
