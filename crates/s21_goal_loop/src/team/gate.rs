//! The plan gate: a teammate that must plan first cannot change the
//! workspace until the lead approves its plan.
//!
//! Each teammate's loop keeps one [`PlanGate`] and asks it before every
//! tool call. Reading is always allowed — a plan needs a look around — but
//! the tools that change files or run commands are refused, with a message
//! the model can act on, until the plan request is approved.

use std::fmt;

use super::protocol::{RequestKind, RequestStatus, Transition};

/// The tools that change the workspace, refused until a plan is approved.
pub const GATED_TOOLS: [&str; 3] = ["bash", "write_file", "edit_file"];

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
    /// Whether the teammate may call `tool` now; if not, the message the
    /// model sees instead of the tool's result.
    pub fn allows(&self, tool: &str) -> Result<(), String> {
        if !GATED_TOOLS.contains(&tool) {
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
        Err(format!(
            "Blocked: plan status is {}; `{tool}` changes the workspace, so {next}",
            self.status
        ))
    }
    // ANCHOR_END: allows
}
