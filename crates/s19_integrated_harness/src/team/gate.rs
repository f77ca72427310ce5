//! The plan gate: a teammate that must plan first cannot change the
//! workspace until the lead approves its plan.
//!
//! Each teammate's loop keeps one [`PlanGate`] and asks it before every
//! tool call. While a plan is required, pending or rejected, only the tools
//! on an allowlist run: reading (a plan needs a look around), listing, and
//! the messages and the plan itself. Every other tool is refused, with a
//! message the model can act on, until the plan request is approved. An
//! allowlist, not a list of dangerous tools: a tool added later (an MCP
//! server's, one that creates tasks or worktrees) is blocked until someone
//! decides it is read-only, instead of slipping through because nobody
//! thought to list it.

use std::fmt;

use super::protocol::{RequestKind, RequestStatus, Transition};

// ANCHOR: allowlist
/// The tools a teammate may call while its plan is not approved: they read
/// or list and change nothing, or (the last two) are how it talks to the
/// lead and submits the plan. Every other tool waits for approval.
pub const ALLOWED_BEFORE_APPROVAL: [&str; 6] = [
    "read_file",
    "glob",
    "list_tasks",
    "get_task",
    "send_message",
    SUBMIT_PLAN_TOOL,
];
// ANCHOR_END: allowlist

/// The teammate's tool that submits a plan for approval.
pub const SUBMIT_PLAN_TOOL: &str = "submit_plan";

/// Where a teammate's plan stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanStatus {
    /// This teammate may work without a plan.
    NotRequired,
    /// A plan is required and none has been submitted.
    Required,
    /// A plan was submitted as this request and awaits the lead.
    Pending { request_id: String },
    /// The lead approved the plan.
    Approved,
    /// The lead rejected the plan; a revised one may be submitted.
    Rejected,
}

impl fmt::Display for PlanStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotRequired => f.write_str("not_required"),
            Self::Required => f.write_str("required"),
            Self::Pending { request_id } => write!(f, "pending ({request_id})"),
            Self::Approved => f.write_str("approved"),
            Self::Rejected => f.write_str("rejected"),
        }
    }
}

/// One teammate's plan gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanGate {
    status: PlanStatus,
}

impl PlanGate {
    /// A gate that starts `required` (closed) or `not_required` (open).
    pub fn new(required: bool) -> Self {
        let status = if required {
            PlanStatus::Required
        } else {
            PlanStatus::NotRequired
        };
        Self { status }
    }

    /// Where the plan stands.
    pub fn status(&self) -> &PlanStatus {
        &self.status
    }

    /// Closes the gate because the lead asked for a plan (`request_plan`):
    /// the teammate must submit one and have it approved before it changes
    /// anything again. A plan already pending stays pending: the lead's
    /// answer to it will do.
    pub fn require(&mut self) {
        if !matches!(self.status, PlanStatus::Pending { .. }) {
            self.status = PlanStatus::Required;
        }
    }

    /// Records that a plan was submitted as `request_id`. A new plan
    /// replaces a pending one: only the answer to the latest counts. A
    /// teammate that needed no plan but submitted one waits for its answer
    /// too: it asked.
    pub fn submitted(&mut self, request_id: impl Into<String>) {
        self.status = PlanStatus::Pending {
            request_id: request_id.into(),
        };
    }

    /// Applies the lead's answer, if it answers the pending plan. Returns
    /// whether the status changed: an answer to a replaced plan, or to
    /// another kind of request, is ignored.
    pub fn apply(&mut self, transition: &Transition) -> bool {
        let request = &transition.request;
        let answers_pending = matches!(
            &self.status,
            PlanStatus::Pending { request_id } if *request_id == request.request_id
        );
        if !answers_pending || request.kind != RequestKind::PlanApproval {
            return false;
        }
        self.status = match request.status {
            RequestStatus::Approved => PlanStatus::Approved,
            RequestStatus::Rejected => PlanStatus::Rejected,
            RequestStatus::Pending => return false,
        };
        true
    }

    // ANCHOR: allows
    /// Whether the teammate may call `tool` now; if not, why, which the
    /// model sees instead of the tool's result.
    pub fn allows(&self, tool: &str) -> Result<(), Blocked> {
        if ALLOWED_BEFORE_APPROVAL.contains(&tool) {
            return Ok(());
        }
        let next = match &self.status {
            PlanStatus::NotRequired | PlanStatus::Approved => return Ok(()),
            PlanStatus::Required => {
                format!("submit a plan with {SUBMIT_PLAN_TOOL} and wait for approval")
            }
            PlanStatus::Pending { .. } => {
                "wait for the lead to approve the plan (read-only tools still work)".to_string()
            }
            PlanStatus::Rejected => format!(
                "revise the plan using the lead's feedback, submit it again with \
                 {SUBMIT_PLAN_TOOL} and wait for approval"
            ),
        };
        Err(Blocked {
            status: self.status.to_string(),
            tool: tool.to_string(),
            next,
        })
    }
    // ANCHOR_END: allows
}

/// A tool call the plan gate refused: which tool, the plan's status, and
/// what the teammate must do before the tool runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Blocked: plan status is {status}; `{tool}` is not a read-only tool, so {next}")]
pub struct Blocked {
    status: String,
    tool: String,
    next: String,
}
