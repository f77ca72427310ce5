//! Sending on the team: the lead's name, who a message may go to, and the
//! `send_message` tool that the lead and every teammate have.
//!
//! It sits below [`super::teammate`], [`super::lead`] and [`super::tools`]
//! because all three send: a teammate reports to the lead and answers its
//! requests, the lead writes to teammates, and the tools do either for a
//! model. Holding it here, and nothing above it, lets each of those files
//! stand above what it uses: the lead runs teammates, the tools drive the
//! lead, and no file imports one that imports it back.

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::error::TeamError;
use super::roster::{Member, Roster};
use super::{Message, MessageBus, MessageKind, NameError};

/// The lead's name on the bus.
pub const LEAD: &str = "lead";

/// Posts a message built by `Message::new`: a bad name or a bus that
/// cannot deliver is one error.
pub fn post(bus: &MessageBus, message: Result<Message, NameError>) -> Result<(), TeamError> {
    bus.send_message(message?)?;
    Ok(())
}

/// What `send_message` takes, from the lead and from teammates alike.
#[derive(Deserialize)]
pub(super) struct SendInput {
    pub(super) to: String,
    pub(super) content: String,
}

/// `send_message`, for the lead and for teammates alike.
pub fn send_message_spec() -> ToolSpec {
    ToolSpec::new(
        "send_message",
        "Send a message to a teammate, to `lead`, or to `all` teammates. It is delivered \
         to their mailbox; replies come back to you as messages.",
        json!({
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "A teammate's name, `lead`, or `all`."},
                "content": {"type": "string"}
            },
            "required": ["to", "content"]
        }),
    )
}

/// A teammate's `send_message`: from `me` to a teammate, the lead or all.
pub fn send_message(bus: &MessageBus, roster: &Roster, me: &str, input: &Value) -> ToolOutput {
    let input: SendInput = match parse_input("send_message", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    let recipients = match recipients(roster, me, input.to.trim()) {
        Ok(recipients) => recipients,
        Err(error) => return ToolOutput::error(format!("Not sent: {error}")),
    };
    for recipient in &recipients {
        if let Err(error) = post(
            bus,
            Message::new(me, recipient, MessageKind::Message, input.content.clone()),
        ) {
            return ToolOutput::error(format!("Not sent to {recipient}: {error}"));
        }
    }
    ToolOutput::ok(format!("Sent to {}.", recipients.join(", ")))
}

/// Who a message from `from` to `to` goes to: the lead, one live teammate,
/// or (`all`) every live teammate but the sender. A name that is not on the
/// team is refused, so no mailbox is made for an agent that will never
/// read it.
pub fn recipients(roster: &Roster, from: &str, to: &str) -> Result<Vec<String>, TeamError> {
    let members = roster.list();
    if to == "all" {
        let all: Vec<String> = members
            .into_iter()
            .filter(|member| member.is_alive() && member.name != from)
            .map(|member| member.name)
            .collect();
        return if all.is_empty() {
            Err(TeamError::NoOtherTeammates)
        } else {
            Ok(all)
        };
    }
    if to == from {
        return Err(TeamError::Yourself(to.to_string()));
    }
    if to == LEAD {
        return Ok(vec![to.to_string()]);
    }
    match members.iter().find(|member| member.name == to) {
        Some(member) if member.is_alive() => Ok(vec![to.to_string()]),
        Some(member) => Err(TeamError::NotRunning {
            name: to.to_string(),
            status: member.status.clone(),
        }),
        None => Err(unknown_teammate(to, &members)),
    }
}

/// The error for a name that is not on the team.
pub fn unknown_teammate(name: &str, members: &[Member]) -> TeamError {
    TeamError::Unknown {
        name: name.to_string(),
        team: members.iter().map(|member| member.name.clone()).collect(),
    }
}
