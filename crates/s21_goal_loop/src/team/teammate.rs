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
use shared::tools::Workspace;

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

use super::autonomy::{self, Autonomy, CurrentTask, ScanCount};
use super::board_tools;
use crate::worktrees::tools as worktree_tools;
use crate::worktrees::{BoundWorktree, EventKind, WorktreeManager};

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
    /// own name, and which idle teammates scan (lesson 16).
    pub board: TaskBoard,
    /// How they scan it, and how long their claims hold.
    pub autonomy: Autonomy,
    /// How many scans the team has made.
    pub scans: ScanCount,
    /// The workspace's git worktrees; a task bound to one is worked on
    /// there (lesson 17).
    pub worktrees: WorktreeManager,
}

fn current(task: &CurrentTask) -> MutexGuard<'_, Option<String>> {
    task.locked()
}

/// The worktree a teammate is bound to: the one it last worked in, until
/// the lead keeps or removes it (lesson 17). Shared by its tools (which
/// run there) and its runtime (whose assignments say so).
pub type Binding = Arc<Mutex<Option<BoundWorktree>>>;

fn binding(bound: &Binding) -> MutexGuard<'_, Option<BoundWorktree>> {
    bound.locked()
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
    let held: CurrentTask = Arc::new(Mutex::new(None));
    let bound: Binding = Arc::new(Mutex::new(None));
    let mut agent = agent_for(&shared, &spec, &plan_gate, &held, &bound);
    let mut history: Vec<Turn> = Vec::new();
    let mut assignment = Some(format!("[Assignment from {LEAD}]\n{}", spec.prompt));
    loop {
        if let Some(prompt) = assignment.take() {
            shared
                .roster
                .update(&name, Status::Working, "working on an assignment");
            let outcome = work(
                &shared,
                &name,
                &held,
                &mut agent,
                &mut history,
                &prompt,
                &cancel,
            )
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
        // IDLE: mail first; between waits, the board.
        match idle(&shared, &name, &plan_gate, &held, &bound, &cancel).await {
            Idle::Work(prompt) => assignment = Some(prompt),
            Idle::Shutdown => {
                shared
                    .roster
                    .update(&name, Status::ShutDown, "accepted a shutdown request");
                return;
            }
            Idle::Cancelled => return,
        }
    }
}
// ANCHOR_END: run

/// How an idle spell ended.
enum Idle {
    Work(String),
    Shutdown,
    Cancelled,
}

// ANCHOR: idle
/// Waits for mail; each time a pause passes without any, scans the board
/// and claims what can start. The pause doubles, up to a maximum, while
/// the board has nothing.
async fn idle(
    shared: &Shared,
    name: &str,
    plan_gate: &SharedGate,
    held: &CurrentTask,
    bound: &Binding,
    cancel: &CancellationToken,
) -> Idle {
    let mut pause = shared.autonomy.scan_first;
    loop {
        tokio::select! {
            waited = shared.bus.wait(name) => {
                if let Err(error) = waited {
                    shared.context.notices.emit(name, format!("cannot wait for mail: {error}"));
                    return Idle::Cancelled;
                }
                match read_mail(shared, name, plan_gate) {
                    Mail::Work(text) => return Idle::Work(text),
                    Mail::Shutdown => return Idle::Shutdown,
                    Mail::Nothing => {}
                }
            }
            () = tokio::time::sleep(pause) => {
                // A teammate whose plan is not approved may not start work.
                let may_work = gate(plan_gate).allows("write_file").is_ok();
                if may_work && let Some(leased) = claim(shared, name).await {
                    *current(held) = Some(leased.task.id.clone());
                    if let Some(previous) = &leased.reclaimed_from {
                        tell_lead(shared, name, format!(
                            "Reclaimed task {} ({}) from {previous}, whose lease expired.",
                            leased.task.id, leased.task.subject
                        ));
                    }
                    shared.roster.update(name, Status::Working, format!("claimed task {}", leased.task.id));
                    let mut prompt = autonomy::assignment(&leased);
                    let stays = binding(bound)
                        .clone()
                        .filter(|old| shared.worktrees.released(&old.name).is_none());
                    if let Some(bound) = shared.worktrees.bound_to(&leased.task.id) {
                        prompt.push_str(&format!(
                            "\nThis task has its own git worktree, `{}`: your files and commands \
                             are there, on branch wt/{}, not in the main checkout. Commit your \
                             work there when it is done.",
                            bound.name, bound.name
                        ));
                    } else if let Some(old) = stays {
                        prompt.push_str(&format!(
                            "\nThis task has no worktree of its own, so you stay in `{}`, on \
                             branch wt/{}, where you worked last, until {LEAD} keeps or removes \
                             it: your files and commands are there, not in the main checkout.",
                            old.name, old.name
                        ));
                    }
                    return Idle::Work(prompt);
                }
                pause = (pause * 2).min(shared.autonomy.scan_max);
            }
            () = cancel.cancelled() => return Idle::Cancelled,
        }
    }
}
// ANCHOR_END: idle

/// Scans and claims on a blocking thread: the board takes a file lock.
async fn claim(shared: &Shared, name: &str) -> Option<crate::tasks::Leased> {
    let (board, autonomy, scans, name) = (
        shared.board.clone(),
        shared.autonomy.clone(),
        shared.scans.clone(),
        name.to_string(),
    );
    tokio::task::spawn_blocking(move || autonomy::claim_next(&board, &name, &autonomy, &scans))
        .await
        .ok()
        .flatten()
}

// ANCHOR: work
/// Runs one assignment, renewing the lease on the task it holds every
/// third of the lease while the turn runs.
async fn work(
    shared: &Shared,
    name: &str,
    held: &CurrentTask,
    agent: &mut Agent<TeammateHooks>,
    history: &mut Vec<Turn>,
    prompt: &str,
    cancel: &CancellationToken,
) -> Result<shared::agent::TurnOutcome, TurnError> {
    let mut relay = Relay {
        name: name.to_string(),
        notices: shared.context.notices.clone(),
    };
    let turn = agent.run_turn(history, prompt, &mut relay, cancel);
    tokio::pin!(turn);
    let mut renewals = tokio::time::interval(shared.autonomy.lease / 3);
    renewals.tick().await;
    loop {
        tokio::select! {
            outcome = &mut turn => return outcome,
            _ = renewals.tick() => {
                let task = current(held).clone();
                if let Some(id) = task
                    && let Err(refusal) = shared.board.renew(&id, name, autonomy::now_secs(), shared.autonomy.lease)
                {
                    // Someone took the task over: it is no longer ours.
                    shared.context.notices.emit(name, format!("lost task {id}: {refusal}"));
                    *current(held) = None;
                }
            }
        }
    }
}
// ANCHOR_END: work

/// Sends the lead a plain message from `name`.
fn tell_lead(shared: &Shared, name: &str, text: String) {
    if let Err(error) = post(
        &shared.bus,
        Message::new(name, LEAD, MessageKind::Message, text),
    ) {
        shared
            .context
            .notices
            .emit(name, format!("could not tell {LEAD}: {error}"));
    }
}

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
fn agent_for(
    shared: &Shared,
    spec: &Spec,
    plan_gate: &SharedGate,
    held: &CurrentTask,
    bound: &Binding,
) -> Agent<TeammateHooks> {
    let own_notices = Notices::new();
    let context = ToolContext {
        notices: own_notices.clone(),
        ..shared.context.clone()
    };
    let mut tools = base_tools();
    register_tools(&mut tools, shared, &spec.name, plan_gate);
    board_tools::register(
        &mut tools,
        &shared.board,
        &spec.name,
        &shared.autonomy,
        held,
    );
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
        held: Arc::clone(held),
        bound: Arc::clone(bound),
        worktrees: shared.worktrees.clone(),
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
    /// The task it holds, the worktree it is bound to, and the worktrees,
    /// to know where its tools run.
    held: CurrentTask,
    bound: Binding,
    worktrees: WorktreeManager,
}

/// A worktree the teammate is bound to that can no longer be a workspace
/// (its directory is gone): the lead must recreate or remove it.
#[derive(Debug, thiserror::Error)]
#[error(
    "The worktree `{name}` you work in cannot be used ({source}); ask {LEAD} to recreate or \
     remove it."
)]
struct UnusableWorktree {
    name: String,
    source: std::io::Error,
}

/// Where one tool call runs, and what the teammate must be told about it.
struct Place {
    context: ToolContext,
    /// Said with the call's result when the binding just ended.
    note: Option<String>,
}

impl TeammateHooks {
    // ANCHOR: place
    /// Where this call runs: the worktree the teammate is bound to, or the
    /// main workspace.
    ///
    /// Claiming a task that has a worktree binds the teammate to it. The
    /// binding outlives the task: after `complete_task` the teammate may
    /// still commit, or fix what the lead asks for by message, and that
    /// work belongs on the task's branch, never in the user's checkout. So
    /// it ends only when the lead keeps or removes the worktree (read from
    /// the event log, see [`WorktreeManager::released`]); the call that
    /// first runs in the main workspace again says so in its result.
    /// Claiming another task that has its own worktree moves the teammate
    /// there: that task's work belongs on that task's branch, and neither
    /// is the main checkout. A task without a worktree leaves it where it
    /// is bound. Looked up per call, so a claim, or the lead's keep or
    /// remove, takes effect at once. The worktree becomes the call's whole
    /// [`Workspace`], so paths are confined to it exactly as lesson 2
    /// confines them to the workspace.
    fn place(&self) -> Result<Place, UnusableWorktree> {
        let task = current(&self.held).clone();
        let mut bound = binding(&self.bound);
        if let Some(worktree) = task.and_then(|id| self.worktrees.bound_to(&id)) {
            *bound = Some(worktree);
        } else if let Some(worktree) = bound.clone()
            && let Some(release) = self.worktrees.released(&worktree.name)
        {
            *bound = None;
            let done = if release == EventKind::Remove {
                format!("removed the worktree `{}`", worktree.name)
            } else {
                format!("kept the worktree `{}` for review", worktree.name)
            };
            let note = format!(
                "[{LEAD} has {done}, so your work there is over: from now on your files and \
                 commands are in the main checkout, {}.]",
                self.context.workspace.root().display()
            );
            return Ok(Place {
                context: self.context.clone(),
                note: Some(note),
            });
        }
        let Some(worktree) = bound.clone() else {
            return Ok(Place {
                context: self.context.clone(),
                note: None,
            });
        };
        let workspace = Workspace::new(&worktree.path).map_err(|source| UnusableWorktree {
            name: worktree.name.clone(),
            source,
        })?;
        Ok(Place {
            context: ToolContext {
                workspace,
                ..self.context.clone()
            },
            note: None,
        })
    }
    // ANCHOR_END: place
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
        let place = match self.place() {
            Ok(place) => place,
            Err(unusable) => return ToolOutput::error(unusable.to_string()),
        };
        let output = self.tools.dispatch(call, &place.context).await;
        let mut output = self.registry.trigger_post_tool_use(call, output);
        if let Some(note) = place.note {
            self.context.notices.emit(worktree_tools::TAG, note.clone());
            output.text = format!("{note}\n\n{}", output.text);
        }
        output
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
