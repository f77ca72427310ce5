//! A teammate: the shared loop on a tokio task of its own, for as long as
//! the team lasts.
//!
//! A subagent (lesson 6) lives for one tool call. A teammate lives until it
//! is shut down, and keeps its history between assignments:
//!
//! ```text
//!   spawned ─► WORK (a turn on its assignment) ─► result + idle_notification
//!                ▲                                        │
//!                └── a message arrives ◄── IDLE (waits on its mailbox)
//!                                                         │
//!                          shutdown_request ─► shutdown_response ─► gone
//! ```
//!
//! What it reads arrives in its mailbox; what it reports goes to the lead's.
//! Its turns run behind the same hook registry as the lead's (the permission
//! gate above all) and, when its spawn or the lead's `request_plan` asked
//! for a plan, behind a [`PlanGate`] that lets only read-only tools run
//! until the lead approves.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Event, Limits, Observer, TurnError};
use shared::cli::{Setup, describe_input};
use shared::error::ApiError;
use shared::hooks::{Hooks, ModelCall, ToolOutput};
use shared::model::Model;
use shared::notice::Notices;
use shared::protocol::{Message as Turn, Response, SystemBlock, ToolSpec, ToolUse};
use shared::sync::LockExt;
use shared::text::truncate_chars;

use super::gate::SUBMIT_PLAN_TOOL;
use super::roster::{Roster, Status};
use super::{
    LEAD, Message, MessageBus, MessageKind, PlanGate, PlanStatus, Protocols, RequestKind,
    RequestStatus, Transition, post,
};
use crate::compact::{CompactConfig, Compactor, send_with_reactive_compaction};
use crate::dispatch::{ToolContext, ToolRegistry, base_tools};
use crate::subagent::SharedHooks;
use crate::tasks::TaskBoard;
use crate::tasks::tools::{self as task_tools, Caller};

/// Model calls a teammate may make on one assignment.
pub const TEAMMATE_MAX_ROUNDS: usize = 50;

/// What the lead asks for when it spawns a teammate.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub role: String,
    /// The first assignment.
    pub prompt: String,
    /// Whether the teammate must have a plan approved before it may change
    /// anything.
    pub require_plan: bool,
}

/// What every teammate shares with the lead.
#[derive(Clone)]
pub struct Shared {
    pub bus: MessageBus,
    pub protocols: Protocols,
    pub roster: Roster,
    pub model: Arc<dyn Model>,
    pub model_id: String,
    pub compact: CompactConfig,
    pub registry: SharedHooks,
    /// The lead's tool context: the workspace, and the notices the user
    /// sees.
    pub context: ToolContext,
    /// The workspace's task board, whose tools each teammate has in its
    /// own name.
    pub board: TaskBoard,
}

/// A teammate's plan gate, shared by its tools and its runtime.
pub type SharedGate = Arc<Mutex<PlanGate>>;

fn gate(gate: &SharedGate) -> MutexGuard<'_, PlanGate> {
    gate.locked()
}

// ANCHOR: run
/// Runs one teammate until it is shut down or `cancel` fires.
pub async fn run(shared: Shared, spec: Spec, cancel: CancellationToken) {
    let name = spec.name.clone();
    let plan_gate: SharedGate = Arc::new(Mutex::new(PlanGate::new(spec.require_plan)));
    let mut agent = agent_for(&shared, &spec, &plan_gate);
    let mut history: Vec<Turn> = Vec::new();
    let mut assignment = Some(format!("[Assignment from {LEAD}]\n{}", spec.prompt));
    loop {
        if let Some(prompt) = assignment.take() {
            shared
                .roster
                .update(&name, Status::Working, "working on an assignment");
            let mut relay = Relay {
                name: name.clone(),
                notices: shared.context.notices.clone(),
            };
            let outcome = agent
                .run_turn(&mut history, &prompt, &mut relay, &cancel)
                .await;
            if cancel.is_cancelled() {
                return;
            }
            let waiting = matches!(gate(&plan_gate).status(), PlanStatus::Pending { .. });
            let status = if waiting {
                Status::AwaitingApproval
            } else {
                Status::Idle
            };
            // The roster changes before the lead is told: a lead that
            // lists the team when the idle notification arrives sees the
            // teammate idle, never still working.
            shared.roster.update(&name, status, "reported its result");
            report(&shared, &name, outcome);
        }
        // IDLE: wait for mail, without spinning.
        tokio::select! {
            waited = shared.bus.wait(&name) => {
                if let Err(error) = waited {
                    shared.context.notices.emit(name.as_str(), format!("cannot wait for mail: {error}"));
                    return;
                }
            }
            () = cancel.cancelled() => return,
        }
        match read_mail(&shared, &name, &plan_gate) {
            Mail::Work(text) => assignment = Some(text),
            Mail::Nothing => {}
            Mail::Shutdown => {
                shared
                    .roster
                    .update(&name, Status::ShutDown, "accepted a shutdown request");
                return;
            }
        }
    }
}
// ANCHOR_END: run

/// What a drained mailbox asked of the teammate.
enum Mail {
    /// Messages to work on, as one prompt.
    Work(String),
    /// Only bookkeeping (or nothing readable).
    Nothing,
    /// A shutdown request, answered.
    Shutdown,
}

// ANCHOR: read_mail
/// Drains the teammate's mailbox and acts on what it holds: a shutdown
/// request is answered and ends the teammate; a plan request closes its
/// gate; a plan decision opens or keeps closed its gate; everything else
/// becomes the next prompt.
fn read_mail(shared: &Shared, name: &str, plan_gate: &SharedGate) -> Mail {
    let delivery = match shared.bus.take(name) {
        Ok(delivery) => delivery,
        Err(error) => {
            shared
                .context
                .notices
                .emit(name, format!("could not read its mailbox: {error}"));
            return Mail::Nothing;
        }
    };
    if let Some(request) = delivery
        .messages
        .iter()
        .find(|message| message.kind == MessageKind::ShutdownRequest)
    {
        if !shut_down(shared, name, request, &delivery.messages) {
            // Dropped uncommitted: the whole take comes back next time.
            return Mail::Nothing;
        }
        if let Err(error) = delivery.commit() {
            shared
                .context
                .notices
                .emit(name, format!("could not clear its mailbox: {error}"));
        }
        return Mail::Shutdown;
    }
    let mut texts = Vec::new();
    for message in &delivery.messages {
        match message.kind {
            MessageKind::PlanRequest => {
                gate(plan_gate).require();
                texts.push(format!(
                    "[plan_request from {}] {}\nSubmit your plan with {SUBMIT_PLAN_TOOL} and \
                     end your turn. Until the lead approves it, only read-only tools work.",
                    message.from, message.content
                ));
            }
            MessageKind::PlanApprovalResponse => {
                texts.push(plan_decision(shared, plan_gate, message));
            }
            _ => texts.push(format!(
                "[{} from {}] {}",
                message.kind, message.from, message.content
            )),
        }
    }
    // The messages are handled (the gate moved, the texts taken), so the
    // mailbox may forget them.
    if let Err(error) = delivery.commit() {
        shared
            .context
            .notices
            .emit(name, format!("could not clear its mailbox: {error}"));
    }
    if texts.is_empty() {
        Mail::Nothing
    } else {
        Mail::Work(texts.join("\n\n"))
    }
}

/// Applies the lead's decision on the plan `message` answers to the gate,
/// and says what the teammate is told of it.
fn plan_decision(shared: &Shared, plan_gate: &SharedGate, message: &Message) -> String {
    let request_id = message.request_id.clone().unwrap_or_default();
    // The lead's decision is the shared protocol state, not the message's
    // own `approve`: a forged or duplicate message cannot open the gate.
    let settled = shared.protocols.get(&request_id).map(|request| Transition {
        before: RequestStatus::Pending,
        request,
    });
    let applied = settled
        .as_ref()
        .is_some_and(|transition| gate(plan_gate).apply(transition));
    match settled {
        Some(transition) if applied => format!(
            "[Plan {} {} by {}] {}",
            transition.request.request_id, transition.request.status, message.from, message.content
        ),
        _ => format!(
            "[Ignored a plan response from {} for {request_id}: it answers no plan of \
             yours that is waiting]",
            message.from
        ),
    }
}

/// Answers a shutdown `request` that came in one take with `batch`. The
/// rest of the batch is not handled (the teammate is leaving), so it goes
/// back into the inbox, under fresh ids (the bus would drop the old ones
/// as already handled), and the answer tells the lead how many are left
/// there. Returns false, and does not answer, if any of them could not be
/// put back: the caller then leaves the take uncommitted, so it comes back.
fn shut_down(shared: &Shared, name: &str, request: &Message, batch: &[Message]) -> bool {
    let unread: Vec<&Message> = batch
        .iter()
        .filter(|message| message.kind != MessageKind::ShutdownRequest)
        .collect();
    for message in &unread {
        let again = Message {
            id: super::message::new_id(),
            ..(*message).clone()
        };
        if let Err(error) = shared.bus.send_message(again) {
            shared.context.notices.emit(
                name,
                format!("could not keep the mail that came with its shutdown: {error}"),
            );
            return false;
        }
    }
    let answer = if unread.is_empty() {
        "Shutting down.".to_string()
    } else {
        format!(
            "Shutting down; {} left unread in my mailbox.",
            shared::text::plural(unread.len(), "message", "messages")
        )
    };
    let request_id = request.request_id.clone().unwrap_or_default();
    let reply = Message::new(name, &request.from, MessageKind::ShutdownResponse, answer)
        .map(|reply| reply.with_request_id(request_id).with_approve(true));
    if let Err(error) = post(&shared.bus, reply) {
        shared
            .context
            .notices
            .emit(name, format!("could not answer the shutdown: {error}"));
    }
    true
}
// ANCHOR_END: read_mail

/// Sends the lead the turn's result, then that the teammate is idle: two
/// messages, because "what did it produce" and "can it take more work" are
/// two facts.
fn report(shared: &Shared, name: &str, outcome: Result<shared::agent::TurnOutcome, TurnError>) {
    let result = match outcome {
        Ok(outcome) if outcome.final_text.trim().is_empty() => {
            "(finished without a summary)".to_string()
        }
        Ok(outcome) => outcome.final_text.trim().to_string(),
        Err(error) => format!("(the assignment ended early: {error})"),
    };
    for (kind, content) in [
        (MessageKind::Result, result),
        (
            MessageKind::IdleNotification,
            "Waiting for more work.".to_string(),
        ),
    ] {
        if let Err(error) = post(&shared.bus, Message::new(name, LEAD, kind, content)) {
            shared
                .context
                .notices
                .emit(name, format!("could not report to {LEAD}: {error}"));
        }
    }
}

/// The teammate's agent: the lead's model and hook registry, its own
/// prompt, tools, compactor and notices.
fn agent_for(shared: &Shared, spec: &Spec, plan_gate: &SharedGate) -> Agent<TeammateHooks> {
    let own_notices = Notices::new();
    let context = ToolContext {
        notices: own_notices.clone(),
        ..shared.context.clone()
    };
    let mut tools = base_tools();
    register_tools(&mut tools, shared, &spec.name, plan_gate);
    let setup = Setup::new(
        context.workspace.clone(),
        shared.model.clone(),
        shared.model_id.clone(),
    )
    .with_notices(own_notices.clone());
    let hooks = TeammateHooks {
        name: spec.name.clone(),
        role: spec.role.clone(),
        tools,
        registry: shared.registry.clone(),
        compactor: Compactor::new(&setup, shared.compact.clone()),
        gate: Arc::clone(plan_gate),
        context,
    };
    let mut agent =
        Agent::new(shared.model.clone(), shared.model_id.clone(), hooks).with_notices(own_notices);
    agent.set_limits(Limits {
        max_rounds: Some(TEAMMATE_MAX_ROUNDS),
        ..Limits::default()
    });
    agent
}

// ANCHOR: teammate_tools
/// The teammate's own tools: the task board's in its name, `send_message`
/// and `submit_plan`.
fn register_tools(tools: &mut ToolRegistry, shared: &Shared, name: &str, plan_gate: &SharedGate) {
    task_tools::register(tools, &shared.board, &Caller::Teammate(name.to_string()));
    let (bus, roster, me) = (shared.bus.clone(), shared.roster.clone(), name.to_string());
    tools.register(super::send::send_message_spec(), move |input, _cx| {
        let output = super::send::send_message(&bus, &roster, &me, &input);
        async move { output }
    });
    let (bus, protocols, me, plan_gate) = (
        shared.bus.clone(),
        shared.protocols.clone(),
        name.to_string(),
        Arc::clone(plan_gate),
    );
    tools.register(submit_plan_spec(), move |input, _cx| {
        let output = submit_plan(&bus, &protocols, &me, &plan_gate, &input);
        async move { output }
    });
}

fn submit_plan_spec() -> ToolSpec {
    ToolSpec::new(
        "submit_plan",
        "Send your plan to the lead for approval. Then end your turn: the lead's decision \
         arrives as a message. While a required plan is not approved, only read-only tools \
         (read_file, glob, the list tools, send_message, submit_plan) work.",
        json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "What you will change, and how."}},
            "required": ["plan"]
        }),
    )
}

/// Opens a plan-approval request to the lead and moves the gate to pending.
fn submit_plan(
    bus: &MessageBus,
    protocols: &Protocols,
    me: &str,
    plan_gate: &SharedGate,
    input: &Value,
) -> ToolOutput {
    let Some(plan) = input
        .get("plan")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
    else {
        return ToolOutput::error(
            "Invalid input for submit_plan: `plan` must be a non-empty string.",
        );
    };
    let request = match protocols.open(RequestKind::PlanApproval, me, LEAD, plan) {
        Ok(request) => request,
        Err(error) => return ToolOutput::error(format!("Could not open the request: {error}")),
    };
    if let Err(error) = post(bus, request.to_message()) {
        return ToolOutput::error(format!("Could not send the plan: {error}"));
    }
    gate(plan_gate).submitted(&request.request_id);
    ToolOutput::ok(format!(
        "Plan sent to {LEAD} as {}. End your turn now; the decision arrives as a message.",
        request.request_id
    ))
}
// ANCHOR_END: teammate_tools

/// Shows a teammate's work as notices tagged with its name.
struct Relay {
    name: String,
    notices: Notices,
}

impl Observer for Relay {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::ToolCall(call) => self.notices.emit(
                self.name.as_str(),
                format!("> {}: {}", call.name, describe_input(call)),
            ),
            Event::ToolResult(_, result) if result.is_error => self.notices.emit(
                self.name.as_str(),
                format!("  error: {}", truncate_chars(result.text().trim(), 200)),
            ),
            Event::Notice(notice) => self.notices.emit(self.name.as_str(), notice.to_string()),
            Event::Progress(report) => self.notices.progress(report.clone()),
            Event::Delta(_) | Event::ReplyDone | Event::ToolResult(..) => {}
        }
    }
}

// ANCHOR: hooks
/// A teammate's hooks: its prompt, tools, gate and compactor; the lead's
/// hook registry.
struct TeammateHooks {
    name: String,
    role: String,
    tools: ToolRegistry,
    registry: SharedHooks,
    compactor: Compactor,
    gate: SharedGate,
    context: ToolContext,
}

impl Hooks for TeammateHooks {
    fn system_prompt(&mut self) -> Vec<SystemBlock> {
        vec![SystemBlock::text(format!(
            "You are teammate `{}`, role: {}, in a team led by `{LEAD}`, working at {}. \
             Do the assignments you receive with your tools. When an assignment is done, end \
             your turn with a short report: it is sent to {LEAD} automatically, and you wait \
             for the next message. Use send_message to ask {LEAD} or another teammate \
             something mid-task. If your plan must be approved (at spawn, or when {LEAD} asks \
             for one), call submit_plan first and end your turn; only read-only tools work \
             until it is approved.",
            self.name,
            self.role,
            self.context.workspace.root().display()
        ))]
    }

    fn tools(&mut self) -> Vec<ToolSpec> {
        self.tools.specs()
    }

    // ANCHOR: gate
    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        // The plan gate is enforced here, in code, not by asking the model
        // to wait.
        if let Err(blocked) = gate(&self.gate).allows(&call.name) {
            return ToolOutput::error(blocked.to_string());
        }
        if let Some(reason) = self.registry.trigger_pre_tool_use(call) {
            return ToolOutput::error(reason);
        }
        let output = self.tools.dispatch(call, &self.context).await;
        self.registry.trigger_post_tool_use(call, output)
    }
    // ANCHOR_END: gate

    async fn before_model_call(&mut self, history: &mut Vec<Turn>) {
        self.compactor.before_model_call(history).await;
    }

    async fn call_model(&mut self, call: ModelCall<'_, '_>) -> Result<Response, ApiError> {
        send_with_reactive_compaction(&mut self.compactor, call).await
    }
}
// ANCHOR_END: hooks
