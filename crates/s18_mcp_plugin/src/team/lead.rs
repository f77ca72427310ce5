//! The lead's side of the team: starting teammates, the lead's mailbox,
//! and the two protocols it runs.
//!
//! The lead is the agent the user talks to. It never polls an inbox: the
//! runtime drains the lead's mailbox before each of its model calls (and,
//! between turns, as soon as mail arrives) and puts what it found into the
//! conversation as `[Team events]`. Protocol replies are settled on the way
//! in, by request id: a reply whose id is unknown, whose kind does not
//! match, or that comes a second time changes nothing, and the event says
//! so.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use shared::CancellationToken;
use shared::sync::LockExt;
use tokio::task::JoinHandle;

use super::error::TeamError;
use super::roster::{Member, Status};
use super::send::{LEAD, post, recipients, unknown_teammate};
use super::teammate::{self, Shared, Spec};
use super::{Message, MessageKind, Request, RequestKind, validate_name};

/// The tag of the bus's notices: `[bus] auth → lead (result): …`.
pub const TAG_BUS: &str = "bus";

/// The lead's tag for what it does to the team.
pub const TAG_TEAM: &str = "team";

/// The team, as the lead runs it. Clones share it.
#[derive(Clone)]
pub struct Team {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Shared,
    running: Mutex<BTreeMap<String, JoinHandle<()>>>,
    /// Cancelled when the session ends: every teammate stops.
    cancel: CancellationToken,
}

impl Team {
    /// A team whose teammates share `shared` with the lead.
    pub fn new(shared: Shared) -> Self {
        Self {
            inner: Arc::new(Inner {
                shared,
                running: Mutex::new(BTreeMap::new()),
                cancel: CancellationToken::new(),
            }),
        }
    }

    /// What the teammates share with the lead.
    pub fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    // ANCHOR: spawn
    /// Starts a teammate on a tokio task of its own. Must be called inside
    /// a tokio runtime.
    pub fn spawn(&self, spec: Spec) -> Result<(), TeamError> {
        validate_name(&spec.name)?;
        if spec.name == LEAD {
            return Err(TeamError::LeadsName(LEAD));
        }
        let shared = &self.inner.shared;
        if !shared.roster.join(&spec.name, &spec.role) {
            return Err(TeamError::Taken(spec.name));
        }
        // Mail left in this name's mailbox by an earlier session was meant
        // for another teammate that had the name; the new one starts clean.
        if let Ok(old) = shared.bus.take(&spec.name)
            && !old.messages.is_empty()
        {
            let count = old.messages.len();
            if old.commit().is_ok() {
                shared.context.notices.emit(
                    TAG_BUS,
                    format!(
                        "discarded {} left for an earlier `{}`",
                        shared::text::plural(count, "message", "messages"),
                        spec.name
                    ),
                );
            }
        }
        // Said before the teammate starts, so its first words come after.
        shared
            .context
            .notices
            .emit(TAG_TEAM, format!("{} spawned ({})", spec.name, spec.role));
        let name = spec.name.clone();
        let task = tokio::spawn(teammate::run(
            shared.clone(),
            spec,
            self.inner.cancel.child_token(),
        ));
        self.running().insert(name, task);
        Ok(())
    }
    // ANCHOR_END: spawn

    /// Sends `content` from `from` to `to` (`all` for every live teammate).
    pub fn send(&self, from: &str, to: &str, content: &str) -> Result<Vec<String>, TeamError> {
        let shared = &self.inner.shared;
        let recipients = recipients(&shared.roster, from, to)?;
        for recipient in &recipients {
            post(
                &shared.bus,
                Message::new(from, recipient, MessageKind::Message, content),
            )?;
        }
        Ok(recipients)
    }

    // ANCHOR: shutdown
    /// Opens a shutdown request to a teammate and sends it.
    pub fn request_shutdown(&self, name: &str) -> Result<Request, TeamError> {
        let shared = &self.inner.shared;
        match shared.roster.get(name) {
            Some(member) if member.is_alive() => {}
            Some(member) => {
                return Err(TeamError::AlreadyStopped {
                    name: name.to_string(),
                    status: member.status,
                });
            }
            None => return Err(unknown_teammate(name, &shared.roster.list())),
        }
        let request =
            shared
                .protocols
                .open(RequestKind::Shutdown, LEAD, name, "Please shut down.")?;
        post(&shared.bus, request.to_message())?;
        Ok(request)
    }
    // ANCHOR_END: shutdown

    // ANCHOR: request_plan
    /// Asks a teammate for a plan, at any time, not only at spawn: it
    /// closes its plan gate when it reads this, and answers through the
    /// same protocol as a plan required at spawn (`submit_plan` opens a
    /// request, `review_plan` settles it).
    pub fn request_plan(&self, name: &str, about: &str) -> Result<(), TeamError> {
        let shared = &self.inner.shared;
        match shared.roster.get(name) {
            Some(member) if member.is_alive() => {}
            Some(member) => {
                return Err(TeamError::NotRunning {
                    name: name.to_string(),
                    status: member.status,
                });
            }
            None => return Err(unknown_teammate(name, &shared.roster.list())),
        }
        let about = if about.trim().is_empty() {
            "Please send me your plan before you change anything else."
        } else {
            about
        };
        post(
            &shared.bus,
            Message::new(LEAD, name, MessageKind::PlanRequest, about),
        )
    }
    // ANCHOR_END: request_plan

    // ANCHOR: review
    /// The lead's answer to a plan: settles the request, then tells the
    /// teammate. An unknown, mismatched or already settled request is an
    /// error and changes nothing.
    pub fn review_plan(
        &self,
        request_id: &str,
        approve: bool,
        feedback: &str,
    ) -> Result<Request, TeamError> {
        let shared = &self.inner.shared;
        let request = shared
            .protocols
            .respond(
                request_id,
                RequestKind::PlanApproval,
                LEAD,
                approve,
                feedback,
            )?
            .request;
        post(&shared.bus, request.reply(approve, feedback))?;
        Ok(request)
    }
    // ANCHOR_END: review

    // ANCHOR: events
    /// Drains the lead's mailbox, settles protocol replies, and returns the
    /// events as one block of text for the conversation (`None` when the
    /// mailbox was empty). Each message is shown to the user as a `[bus]`
    /// notice too.
    pub fn take_events(&self) -> Option<String> {
        let shared = &self.inner.shared;
        let delivery = match shared.bus.take(LEAD) {
            Ok(delivery) => delivery,
            Err(error) => {
                shared.context.notices.emit(
                    TAG_BUS,
                    format!("could not read the lead's mailbox: {error}"),
                );
                return None;
            }
        };
        let lines: Vec<String> = delivery
            .messages
            .iter()
            .map(|message| self.event_line(message))
            .collect();
        // The events are in hand and go into the conversation now; the
        // mailbox may forget them.
        if let Err(error) = delivery.commit() {
            shared.context.notices.emit(
                TAG_BUS,
                format!("could not clear the lead's mailbox: {error}"),
            );
        }
        if lines.is_empty() {
            return None;
        }
        Some(format!("[Team events]\n{}", lines.join("\n")))
    }

    /// Waits until the lead has mail, then takes it. Cancel-safe: mail is
    /// taken only in the poll that returns it.
    pub async fn next_events(&self) -> String {
        loop {
            if self.inner.shared.bus.wait(LEAD).await.is_err() {
                // Only an invalid name fails, and `lead` is valid: never
                // wake for nothing.
                std::future::pending::<()>().await;
            }
            if let Some(events) = self.take_events() {
                return events;
            }
        }
    }

    /// One event, as the lead's model reads it; settles protocol replies.
    fn event_line(&self, message: &Message) -> String {
        let shared = &self.inner.shared;
        let head = format!("{} → {} ({})", message.from, message.to, message.kind);
        let request_id = message.request_id.clone().unwrap_or_default();
        let line = match message.kind {
            MessageKind::ShutdownResponse => {
                let approve = message.approve.unwrap_or(false);
                match shared.protocols.respond(
                    &request_id,
                    RequestKind::Shutdown,
                    &message.from,
                    approve,
                    &message.content,
                ) {
                    Ok(_) if approve => {
                        format!("{head}: {} accepted shutdown {request_id}", message.from)
                    }
                    Ok(_) => format!("{head}: {} refused shutdown {request_id}", message.from),
                    Err(error) => format!("{head}: ignored, {error}"),
                }
            }
            MessageKind::PlanApprovalRequest => format!(
                "{head} {request_id}: {}\n  (answer with review_plan, request_id {request_id})",
                message.content
            ),
            _ => format!("{head}: {}", message.content),
        };
        shared.context.notices.emit(
            TAG_BUS,
            shared::text::truncate_chars(line.lines().next().unwrap_or_default(), 160),
        );
        line
    }
    // ANCHOR_END: events

    /// Every teammate, with its status and last activity.
    pub fn list(&self) -> Vec<Member> {
        self.inner.shared.roster.list()
    }

    // ANCHOR: stop_all
    /// Stops every teammate still running and reports each.
    pub async fn stop_all(&self) {
        self.inner.cancel.cancel();
        let running = std::mem::take(&mut *self.running());
        for (name, task) in running {
            let finished = task.is_finished();
            // Cancelled teammates return at their next await; abort is for
            // one stuck in a tool.
            task.abort();
            let _ = task.await;
            let shared = &self.inner.shared;
            if !finished
                && shared
                    .roster
                    .get(&name)
                    .is_some_and(|member| member.is_alive())
            {
                shared
                    .roster
                    .update(&name, Status::Stopped("session ended".into()), "stopped");
                shared.context.notices.emit(
                    TAG_BUS,
                    format!("{name} was still on the team at exit and was stopped"),
                );
            }
        }
    }
    // ANCHOR_END: stop_all

    fn running(&self) -> MutexGuard<'_, BTreeMap<String, JoinHandle<()>>> {
        self.inner.running.locked()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.cancel.cancel();
        for task in self.running.inner_mut().values() {
            task.abort();
        }
    }
}
