//! [`MessageBus`]: what the lead and its teammates use to talk, over a
//! directory of mailboxes (see `mailbox.rs` for the files).
//!
//! The delivery guarantee, in two layers:
//!
//! * **On disk, at least once.** A message whose send returned is in its
//!   mailbox file, and leaves the disk only when its consumer commits the
//!   take that delivered it. A consumer that dies (or drops a [`Delivery`])
//!   before committing gets the same messages, with the same ids, at its
//!   next take.
//! * **To the consumer, exactly once.** The bus remembers the ids each
//!   mailbox's consumer has committed (the last [`SEEN_CAPACITY`] of them)
//!   and drops redelivered ones. A restarted consumer that keeps its own
//!   record of what it handled (a transcript, say) tells a new bus with
//!   [`MessageBus::mark_seen`], so redeliveries after a restart are dropped
//!   too.
//!
//! Order: appends to one mailbox are serialized by its lock, and a take
//! returns files oldest first, so messages from one sender arrive in the
//! order they were sent.
//!
//! The file operations block the thread for at most one other holder's
//! append (an `fsync`, milliseconds). That is fine between model calls;
//! async code that cares can call them through `spawn_blocking`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::mem;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shared::sync::LockExt;
use tokio::sync::Notify;

use super::error::BusError;
use super::mailbox::{self, Mailbox, Skipped, Taken};
use super::message::{Message, MessageKind, validate_name};

/// The first pause of [`MessageBus::wait`] before it looks at the disk again.
pub const POLL_FIRST: Duration = Duration::from_millis(50);
/// The longest pause: the pause doubles up to this.
pub const POLL_MAX: Duration = Duration::from_secs(1);
/// How many committed ids the bus remembers, to drop redeliveries.
pub const SEEN_CAPACITY: usize = 10_000;

/// The team's mailboxes in one directory. Cloning is cheap and shares the
/// wake-ups and the record of handled ids.
#[derive(Debug, Clone)]
pub struct MessageBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    /// Wakes this process's waiters on a mailbox when this process sends
    /// to it. Created on first use, one per agent.
    wakers: Mutex<HashMap<String, Arc<Notify>>>,
    seen: Mutex<Seen>,
    /// Lets concurrent `drain`s of this bus wait for each other instead
    /// of failing with `Busy`.
    draining: Mutex<()>,
    disk_checks: AtomicU64,
}

/// The ids committed by each mailbox's consumer, oldest forgotten first.
/// Keys are `mailbox:id`: a broadcast's copies may share nothing else.
#[derive(Debug, Default)]
struct Seen {
    order: VecDeque<String>,
    keys: HashSet<String>,
}

impl Seen {
    fn key(mailbox: &str, id: &str) -> String {
        // Names never contain `:`, so the key is unambiguous.
        format!("{mailbox}:{id}")
    }

    fn contains(&self, mailbox: &str, id: &str) -> bool {
        self.keys.contains(&Self::key(mailbox, id))
    }

    fn insert(&mut self, mailbox: &str, id: &str) {
        let key = Self::key(mailbox, id);
        if self.keys.insert(key.clone()) {
            self.order.push_back(key);
            if self.order.len() > SEEN_CAPACITY
                && let Some(oldest) = self.order.pop_front()
            {
                self.keys.remove(&oldest);
            }
        }
    }
}

/// Messages taken from a mailbox, minus those already handled. Commit once
/// they are handled; drop without committing and they come back.
#[derive(Debug)]
#[must_use = "messages come back until the delivery is committed"]
pub struct Delivery {
    /// The messages not handled before, oldest first.
    pub messages: Vec<Message>,
    /// Lines of the mailbox that were not messages.
    pub skipped: Vec<Skipped>,
    bus: MessageBus,
    name: String,
    /// Every id taken, including redeliveries that were filtered out.
    ids: Vec<String>,
    taken: Taken,
}

impl Delivery {
    /// Says the messages are handled. The bus remembers their ids first,
    /// then removes them from disk; if the removal fails they stay on disk
    /// and will be redelivered, and this bus drops them then.
    pub fn commit(self) -> Result<(), BusError> {
        self.bus
            .mark_seen(&self.name, self.ids.iter().map(String::as_str));
        self.taken.commit()
    }
}

/// What [`MessageBus::drain`] returns.
#[derive(Debug, Default)]
pub struct Drained {
    /// The new messages, oldest first.
    pub messages: Vec<Message>,
    /// Lines of the mailbox that were not messages.
    pub skipped: Vec<Skipped>,
    /// Set if the messages were delivered but their file could not be
    /// removed: it will be taken again, and this bus will drop its ids.
    pub cleanup_error: Option<BusError>,
}

impl MessageBus {
    /// The bus over mailbox directory `dir` (created on the first send).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            inner: Arc::new(Inner {
                dir: dir.into(),
                wakers: Mutex::default(),
                seen: Mutex::default(),
                draining: Mutex::default(),
                disk_checks: AtomicU64::new(0),
            }),
        }
    }

    /// The mailbox directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The mailbox of agent `name`, for lower-level use.
    pub fn mailbox(&self, name: &str) -> Result<Mailbox, BusError> {
        Mailbox::new(&self.inner.dir, name)
    }

    /// Sends a new message (fresh id, stamped now) and returns it.
    pub fn send(
        &self,
        from: &str,
        to: &str,
        kind: MessageKind,
        content: impl Into<String>,
    ) -> Result<Message, BusError> {
        self.send_message(Message::new(from, to, kind, content)?)
    }

    // ANCHOR: send_message
    /// Appends `message` to the mailbox of `message.to` and wakes this
    /// process's waiters on it. When it returns, the message is on disk.
    pub fn send_message(&self, message: Message) -> Result<Message, BusError> {
        validate_name(&message.from)?;
        self.mailbox(&message.to)?.append(&message)?;
        self.waker(&message.to).notify_waiters();
        Ok(message)
    }
    // ANCHOR_END: send_message

    /// Sends one copy of `content`, kind `broadcast`, to each of `to` but
    /// the sender. Every name is checked before the first copy is sent.
    pub fn broadcast(
        &self,
        from: &str,
        to: &[&str],
        content: &str,
    ) -> Result<Vec<Message>, BusError> {
        validate_name(from)?;
        for name in to {
            validate_name(name)?;
        }
        to.iter()
            .filter(|name| **name != from)
            .map(|name| self.send(from, name, MessageKind::Broadcast, content))
            .collect()
    }

    // ANCHOR: take
    /// Takes the messages of `name`'s mailbox that its consumer has not
    /// handled yet. They stay on disk until [`Delivery::commit`].
    pub fn take(&self, name: &str) -> Result<Delivery, BusError> {
        let mut taken = self.mailbox(name)?.take()?;
        let all = mem::take(&mut taken.messages);
        let ids = all.iter().map(|message| message.id.clone()).collect();
        let messages = {
            let seen = self.inner.seen.locked();
            // A sender that retried an append whose fate it did not know
            // may have written the same message twice in one take.
            let mut this_take = HashSet::new();
            all.into_iter()
                .filter(|message| {
                    !seen.contains(name, &message.id) && this_take.insert(message.id.clone())
                })
                .collect()
        };
        Ok(Delivery {
            messages,
            skipped: mem::take(&mut taken.skipped),
            bus: self.clone(),
            name: name.to_string(),
            ids,
            taken,
        })
    }
    // ANCHOR_END: take

    /// Takes and commits at once: each message is returned by exactly one
    /// drain. For consumers whose handling of a message cannot fail once
    /// they have it (putting it into the conversation). Consumers that
    /// could die mid-handling use [`MessageBus::take`].
    pub fn drain(&self, name: &str) -> Result<Drained, BusError> {
        let _one_at_a_time = self.inner.draining.locked();
        let mut delivery = self.take(name)?;
        let messages = mem::take(&mut delivery.messages);
        let skipped = mem::take(&mut delivery.skipped);
        // The ids are remembered before the file is removed, so even when
        // the removal fails the messages are returned and never returned
        // again by this bus.
        let cleanup_error = delivery.commit().err();
        Ok(Drained {
            messages,
            skipped,
            cleanup_error,
        })
    }

    /// Records that `name`'s consumer has handled `ids`, so a redelivery
    /// of them is dropped. A restarted consumer calls this with what its
    /// own records say it handled.
    pub fn mark_seen<'a>(&self, name: &str, ids: impl IntoIterator<Item = &'a str>) {
        let mut seen = self.inner.seen.locked();
        for id in ids {
            seen.insert(name, id);
        }
    }

    /// Whether `name`'s mailbox has nothing to take.
    pub fn is_empty(&self, name: &str) -> Result<bool, BusError> {
        self.mailbox(name)?.is_empty()
    }

    // ANCHOR: wait
    /// Returns once `name`'s mailbox has something to take (at once if it
    /// already has). A send from this process wakes it immediately; a send
    /// from another process is seen by polling, after 50 ms, then 100 ms,
    /// doubling up to once a second. Cancel-safe: it takes nothing.
    ///
    /// An uncommitted take counts as mail, since it will be delivered
    /// again: commit or drop a [`Delivery`] before waiting on its mailbox.
    pub async fn wait(&self, name: &str) -> Result<(), BusError> {
        let mailbox = self.mailbox(name)?;
        let waker = self.waker(name);
        let mut pause = POLL_FIRST;
        loop {
            // Registered before the check, so a send between the check
            // and the sleep still wakes us.
            let mut notified = pin!(waker.notified());
            notified.as_mut().enable();
            self.inner.disk_checks.fetch_add(1, Ordering::Relaxed);
            if !mailbox.is_empty()? {
                return Ok(());
            }
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep(pause) => pause = (pause * 2).min(POLL_MAX),
            }
        }
    }
    // ANCHOR_END: wait

    /// How many times [`MessageBus::wait`] has looked at the disk, over all
    /// mailboxes: shows that an idle agent polls rarely.
    pub fn disk_checks(&self) -> u64 {
        self.inner.disk_checks.load(Ordering::Relaxed)
    }

    /// The agents that have a mailbox, sorted.
    pub fn names(&self) -> Result<Vec<String>, BusError> {
        mailbox::names(&self.inner.dir)
    }

    fn waker(&self, name: &str) -> Arc<Notify> {
        let mut wakers = self.inner.wakers.locked();
        Arc::clone(wakers.entry(name.to_string()).or_default())
    }
}
