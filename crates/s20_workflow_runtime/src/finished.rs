//! The queue of finished work: what ran beside the loop waits here until
//! the agent takes it.
//!
//! Work that ends while the agent is busy (a background command here; a
//! workflow run in lesson 20) is pushed here, and the agent takes it in
//! one of two places: during a turn with [`FinishedQueue::take`], and
//! between turns with [`FinishedQueue::next`], which waits. Taking empties
//! the queue under its lock, so each item is handed out exactly once,
//! however many end in one round.
//!
//! The queue's lock is taken last: code that holds its own lock (the map
//! of running work) may push, and nothing is locked while this one is
//! held. So a mechanism can move an item from "running" to "finished"
//! under its own lock, and whoever holds that lock sees the item in
//! exactly one of the two places.

use std::collections::VecDeque;
use std::sync::Mutex;

use shared::sync::LockExt;
use tokio::sync::Notify;

/// Items that ended, oldest first, and a wake-up for whoever waits.
pub struct FinishedQueue<T> {
    items: Mutex<VecDeque<T>>,
    /// Woken when an item joins the queue.
    ready: Notify,
}

impl<T> Default for FinishedQueue<T> {
    fn default() -> Self {
        Self {
            items: Mutex::new(VecDeque::new()),
            ready: Notify::new(),
        }
    }
}

impl<T> FinishedQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `item` at the end and wakes whoever waits in [`Self::next`].
    pub fn push(&self, item: T) {
        self.items.locked().push_back(item);
        self.ready.notify_one();
    }

    /// Whether nothing is waiting to be taken.
    pub fn is_empty(&self) -> bool {
        self.items.locked().is_empty()
    }

    // ANCHOR: take
    /// Takes every item, oldest first. Each is handed out once.
    pub fn take(&self) -> Vec<T> {
        self.items.locked().drain(..).collect()
    }

    /// Waits until at least one item is there, then takes them all.
    /// Cancel-safe: items are taken only in the poll that returns them.
    pub async fn next(&self) -> Vec<T> {
        loop {
            // Register for the wake-up before looking, so an item pushed
            // between the look and the wait still wakes us.
            let ready = self.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            let items = self.take();
            if !items.is_empty() {
                return items;
            }
            ready.await;
        }
    }
    // ANCHOR_END: take
}
