//! The team's tools. The lead gets six: `spawn_teammate`, `send_message`,
//! `list_teammates`, `request_shutdown`, `request_plan`, `review_plan`. Teammates get
//! `send_message` too (from [`super::send`]) and `submit_plan` (in [`super::teammate`]).
//! There is no inbox tool: mail reaches each agent by itself.

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::lead::Team;
use super::roster::now;
use super::send::{LEAD, SendInput, send_message_spec};
use super::teammate::Spec;
use crate::dispatch::{ToolContext, ToolRegistry};

#[derive(Deserialize)]
struct SpawnInput {
    name: String,
    role: String,
    prompt: String,
    #[serde(default)]
    require_plan: bool,
}

#[derive(Deserialize)]
struct NameInput {
    name: String,
}

#[derive(Deserialize)]
struct PlanInput {
    name: String,
    #[serde(default)]
    about: String,
}

#[derive(Deserialize)]
struct ReviewInput {
    request_id: String,
    approve: bool,
    #[serde(default)]
    feedback: String,
}

// ANCHOR: specs
fn spawn_spec() -> ToolSpec {
    ToolSpec::new(
        crate::permission::SPAWN_TEAMMATE,
        "Start a persistent teammate: another agent with its own context, working in this \
         workspace in parallel with you. Propose the team to the user and wait for their \
         confirmation before calling this; the user is asked to confirm each teammate. \
         The teammate works on `prompt`, reports its result to you, then waits for \
         messages. With require_plan, it must have a plan approved (review_plan) before \
         it may use anything but read-only tools; request_plan asks for one later.",
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "A short name: letters, digits, _ or -."},
                "role": {"type": "string", "description": "Its area of responsibility."},
                "prompt": {"type": "string", "description": "Its first assignment, complete: it sees nothing of this conversation."},
                "require_plan": {"type": "boolean", "description": "Require an approved plan before it changes anything (default false)."}
            },
            "required": ["name", "role", "prompt"]
        }),
    )
}

fn list_spec() -> ToolSpec {
    ToolSpec::new(
        "list_teammates",
        "List the teammates: name, role, status (working, idle, awaiting plan approval, \
         shut down) and last activity.",
        json!({"type": "object", "properties": {}}),
    )
}

fn shutdown_spec() -> ToolSpec {
    ToolSpec::new(
        "request_shutdown",
        "Ask a teammate to shut down. It reads the request when its current turn is over, \
         confirms, and stops; the confirmation arrives as a team event.",
        json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        }),
    )
}

fn request_plan_spec() -> ToolSpec {
    ToolSpec::new(
        "request_plan",
        "Ask a teammate for its plan, at any time. Until you approve the plan it submits \
         (review_plan), it may use only read-only tools. Its plan arrives as a \
         plan_approval_request team event.",
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The teammate."},
                "about": {"type": "string", "description": "What the plan should cover (optional)."}
            },
            "required": ["name"]
        }),
    )
}

fn review_spec() -> ToolSpec {
    ToolSpec::new(
        "review_plan",
        "Approve or reject a teammate's plan, by the request_id of its \
         plan_approval_request. A rejected teammate may revise and submit again.",
        json!({
            "type": "object",
            "properties": {
                "request_id": {"type": "string"},
                "approve": {"type": "boolean"},
                "feedback": {"type": "string"}
            },
            "required": ["request_id", "approve"]
        }),
    )
}
// ANCHOR_END: specs

/// Registers the lead's six tools, working on `team`.
pub fn register(tools: &mut ToolRegistry, team: &Team) {
    let lead = team.clone();
    tools.register(spawn_spec(), move |input, _cx: ToolContext| {
        let output = spawn(&lead, &input);
        async move { output }
    });
    let lead = team.clone();
    tools.register(send_message_spec(), move |input, _cx| {
        let output = match parse_input::<SendInput>("send_message", &input) {
            Ok(input) => match lead.send(LEAD, input.to.trim(), &input.content) {
                Ok(recipients) => ToolOutput::ok(format!("Sent to {}.", recipients.join(", "))),
                Err(error) => ToolOutput::error(format!("Not sent: {error}")),
            },
            Err(output) => output,
        };
        async move { output }
    });
    let lead = team.clone();
    tools.register(list_spec(), move |_input, _cx| {
        let members = lead.list();
        let now = now();
        let output = if members.is_empty() {
            ToolOutput::ok("No teammates yet.")
        } else {
            ToolOutput::ok(
                members
                    .iter()
                    .map(|member| member.line(now))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        };
        async move { output }
    });
    let lead = team.clone();
    tools.register(shutdown_spec(), move |input, _cx| {
        let output = match parse_input::<NameInput>("request_shutdown", &input) {
            Ok(input) => match lead.request_shutdown(input.name.trim()) {
                Ok(request) => ToolOutput::ok(format!(
                    "Shutdown requested from {} as {}; its confirmation arrives as a team event.",
                    request.to, request.request_id
                )),
                Err(error) => ToolOutput::error(format!("No shutdown requested: {error}")),
            },
            Err(output) => output,
        };
        async move { output }
    });
    let lead = team.clone();
    tools.register(request_plan_spec(), move |input, _cx| {
        let output = match parse_input::<PlanInput>("request_plan", &input) {
            Ok(input) => match lead.request_plan(input.name.trim(), &input.about) {
                Ok(()) => ToolOutput::ok(format!(
                    "Asked {} for a plan; it arrives as a plan_approval_request team event.",
                    input.name.trim()
                )),
                Err(error) => ToolOutput::error(format!("No plan requested: {error}")),
            },
            Err(output) => output,
        };
        async move { output }
    });
    let lead = team.clone();
    tools.register(review_spec(), move |input, _cx| {
        let output = match parse_input::<ReviewInput>("review_plan", &input) {
            Ok(input) => {
                match lead.review_plan(input.request_id.trim(), input.approve, &input.feedback) {
                    Ok(request) => ToolOutput::ok(format!(
                        "Plan {} of {} {}; {} has been told.",
                        request.request_id,
                        request.from,
                        if input.approve {
                            "approved"
                        } else {
                            "rejected"
                        },
                        request.from
                    )),
                    Err(error) => ToolOutput::error(format!("Nothing changed: {error}")),
                }
            }
            Err(output) => output,
        };
        async move { output }
    });
}

fn spawn(team: &Team, input: &Value) -> ToolOutput {
    let input: SpawnInput = match parse_input(crate::permission::SPAWN_TEAMMATE, input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    let spec = Spec {
        name: input.name.trim().to_string(),
        role: input.role.trim().to_string(),
        prompt: input.prompt,
        require_plan: input.require_plan,
    };
    let (name, role, plan) = (spec.name.clone(), spec.role.clone(), spec.require_plan);
    match team.spawn(spec) {
        Ok(()) => ToolOutput::ok(format!(
            "Teammate {name} ({role}) started{}. Its result will arrive as a team event.",
            if plan {
                "; it must have its plan approved before it changes anything"
            } else {
                ""
            }
        )),
        Err(error) => ToolOutput::error(format!("Teammate not started: {error}")),
    }
}
