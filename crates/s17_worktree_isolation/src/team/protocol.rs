//! Requests that expect exactly one answer: the lead asking a teammate to
//! shut down, and a teammate asking the lead to approve its plan.
//!
//! Each request gets an id (`req_0001`) that travels in the request
//! message and in its response, and a status that moves once, from
//! `pending` to `approved` or `rejected`. Every other reply is refused with
//! an error that says why, and changes nothing: an unknown id, a response
//! of the wrong kind, a reply from an agent the request was not sent to,
//! and a second reply to an answered request.
//!
//! The requests live in memory. They belong to one lead session: a
//! teammate started by that session answers within it, and after a restart
//! there is no one waiting for old answers. Ids are unique per
//! [`Protocols`], which the lead keeps next to its bus.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use shared::sync::LockExt;
use thiserror::Error;

use super::message::{Message, MessageKind, NameError, validate_name};

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    Shutdown,
    PlanApproval,
}

impl RequestKind {
    /// The message type that opens such a request.
    pub fn request_type(self) -> MessageKind {
        match self {
            Self::Shutdown => MessageKind::ShutdownRequest,
            Self::PlanApproval => MessageKind::PlanApprovalRequest,
        }
    }

    /// The message type that answers it.
    pub fn response_type(self) -> MessageKind {
        match self {
            Self::Shutdown => MessageKind::ShutdownResponse,
            Self::PlanApproval => MessageKind::PlanApprovalResponse,
        }
    }

    /// The kind of request a response message answers, if it is one.
    pub fn answered_by(kind: MessageKind) -> Option<Self> {
        match kind {
            MessageKind::ShutdownResponse => Some(Self::Shutdown),
            MessageKind::PlanApprovalResponse => Some(Self::PlanApproval),
            _ => None,
        }
    }
}

impl fmt::Display for RequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Shutdown => "shutdown",
            Self::PlanApproval => "plan approval",
        })
    }
}

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    Pending,
    Approved,
    Rejected,
}

impl fmt::Display for RequestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        })
    }
}

/// One request and its answer, if it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub request_id: String,
    pub kind: RequestKind,
    /// The agent that asked.
    pub from: String,
    /// The agent that must answer.
    pub to: String,
    pub status: RequestStatus,
    /// What was asked: the plan, or the reason for shutting down.
    pub payload: String,
    /// The answer's explanation, once answered (if it gave one).
    pub feedback: Option<String>,
}

impl Request {
    /// The message that delivers this request to its target.
    pub fn to_message(&self) -> Result<Message, NameError> {
        Ok(Message::new(
            &self.from,
            &self.to,
            self.kind.request_type(),
            self.payload.clone(),
        )?
        .with_request_id(self.request_id.clone()))
    }

    /// The message that answers this request, from its target.
    pub fn reply(&self, approve: bool, feedback: &str) -> Result<Message, NameError> {
        Ok(
            Message::new(&self.to, &self.from, self.kind.response_type(), feedback)?
                .with_request_id(self.request_id.clone())
                .with_approve(approve),
        )
    }
}

/// A request's one move, from `pending` to its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// Always [`RequestStatus::Pending`]: only pending requests move.
    pub before: RequestStatus,
    /// The request as it is now, answered.
    pub request: Request,
}

/// Why a reply was refused. Nothing changes when one is.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("no request has id `{request_id}`")]
    Unknown { request_id: String },
    #[error("`{request_id}` is a {actual} request; a {answered} response cannot answer it")]
    KindMismatch {
        request_id: String,
        actual: RequestKind,
        answered: RequestKind,
    },
    #[error("`{responder}` cannot answer `{request_id}`: it was sent to `{target}`")]
    WrongResponder {
        request_id: String,
        responder: String,
        target: String,
    },
    #[error("`{request_id}` is already {status}; a request is answered once")]
    AlreadyAnswered {
        request_id: String,
        status: RequestStatus,
    },
    #[error("a `{kind}` message answers no request")]
    NotAResponse { kind: MessageKind },
    #[error("the `{kind}` message `{id}` has no `{field}`")]
    MissingField {
        kind: MessageKind,
        id: String,
        field: &'static str,
    },
}

/// The requests of one lead session, shared by the lead's loop and its
/// tools. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct Protocols {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    opened: u64,
    /// In the order they were opened; a session opens few.
    requests: Vec<Request>,
}

impl Protocols {
    /// No requests yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.locked()
    }

    /// Opens a pending request from `from` to `to`, with the next id.
    pub fn open(
        &self,
        kind: RequestKind,
        from: &str,
        to: &str,
        payload: impl Into<String>,
    ) -> Result<Request, ProtocolError> {
        validate_name(from)?;
        validate_name(to)?;
        let mut state = self.state();
        state.opened += 1;
        let request = Request {
            request_id: format!("req_{:04}", state.opened),
            kind,
            from: from.to_string(),
            to: to.to_string(),
            status: RequestStatus::Pending,
            payload: payload.into(),
            feedback: None,
        };
        state.requests.push(request.clone());
        Ok(request)
    }

    // ANCHOR: respond
    /// Answers request `request_id`, of kind `kind`, as `responder`. Every
    /// check comes before the one change, so a refused reply changes
    /// nothing.
    pub fn respond(
        &self,
        request_id: &str,
        kind: RequestKind,
        responder: &str,
        approve: bool,
        feedback: &str,
    ) -> Result<Transition, ProtocolError> {
        // ANCHOR: exercise-s15-respond
        let mut state = self.state();
        let request = state
            .requests
            .iter_mut()
            .find(|request| request.request_id == request_id)
            .ok_or_else(|| ProtocolError::Unknown {
                request_id: request_id.to_string(),
            })?;
        if request.kind != kind {
            return Err(ProtocolError::KindMismatch {
                request_id: request_id.to_string(),
                actual: request.kind,
                answered: kind,
            });
        }
        if request.to != responder {
            return Err(ProtocolError::WrongResponder {
                request_id: request_id.to_string(),
                responder: responder.to_string(),
                target: request.to.clone(),
            });
        }
        if request.status != RequestStatus::Pending {
            return Err(ProtocolError::AlreadyAnswered {
                request_id: request_id.to_string(),
                status: request.status,
            });
        }
        request.status = if approve {
            RequestStatus::Approved
        } else {
            RequestStatus::Rejected
        };
        request.feedback = Some(feedback.to_string()).filter(|text| !text.is_empty());
        Ok(Transition {
            before: RequestStatus::Pending,
            request: request.clone(),
        })
        // ANCHOR_END: exercise-s15-respond
    }
    // ANCHOR_END: respond

    /// Answers with a response message as it came from a mailbox: its type
    /// gives the kind, its sender the responder, its content the feedback.
    pub fn respond_to(&self, message: &Message) -> Result<Transition, ProtocolError> {
        let kind = RequestKind::answered_by(message.kind)
            .ok_or(ProtocolError::NotAResponse { kind: message.kind })?;
        let missing = |field| ProtocolError::MissingField {
            kind: message.kind,
            id: message.id.clone(),
            field,
        };
        let request_id = message
            .request_id
            .as_deref()
            .ok_or_else(|| missing("request_id"))?;
        let approve = message.approve.ok_or_else(|| missing("approve"))?;
        self.respond(request_id, kind, &message.from, approve, &message.content)
    }

    /// The request with `request_id`, as it is now.
    pub fn get(&self, request_id: &str) -> Option<Request> {
        self.state()
            .requests
            .iter()
            .find(|request| request.request_id == request_id)
            .cloned()
    }

    /// Every request, oldest first.
    pub fn list(&self) -> Vec<Request> {
        self.state().requests.clone()
    }

    /// The pending requests `agent` must answer, oldest first.
    pub fn pending_for(&self, agent: &str) -> Vec<Request> {
        self.state()
            .requests
            .iter()
            .filter(|request| request.to == agent && request.status == RequestStatus::Pending)
            .cloned()
            .collect()
    }
}
