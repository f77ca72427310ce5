//! Autonomy: an idle teammate looks for work on the task board (lesson 16).
//!
//! In lesson 15 an idle teammate waits for the lead to send it something.
//! When the work is already on the task board, with its order recorded in
//! `blockedBy`, that is a wasted round trip: the board itself says what can
//! start. So an idle teammate now does two things in turn:
//!
//! 1. **Waits for mail**, for a while: the lead's messages and the
//!    protocols come first.
//! 2. **Scans the board** and tries to claim a task that can start, with
//!    lesson 12's atomic claim, now as a lease that it renews while it works
//!    (see [`crate::tasks::lease`]).
//!
//! An empty scan is not a reason to stop — a blocked task may become ready
//! when someone finishes its dependency — so the teammate stays idle, and
//! scans again after a pause that doubles each time up to a maximum: an idle
//! team costs a file listing every half minute, not a busy core.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::tasks::{Leased, TaskBoard};

/// The task a teammate holds, shared by its runtime (which renews the
/// lease) and its tools (which claim and complete).
pub type CurrentTask = Arc<Mutex<Option<String>>>;

/// How idle teammates look for work, and how long their claims hold.
#[derive(Debug, Clone)]
pub struct Autonomy {
    /// The first pause of an idle teammate before it scans the board.
    pub scan_first: Duration,
    /// The longest pause between scans; the pause doubles up to it.
    pub scan_max: Duration,
    /// How long a claim holds without renewal. The owner renews it every
    /// third of this while it works.
    pub lease: Duration,
}

impl Default for Autonomy {
    fn default() -> Self {
        Self {
            scan_first: Duration::from_secs(1),
            scan_max: Duration::from_secs(30),
            lease: Duration::from_secs(600),
        }
    }
}

/// Counts board scans, to show (and test) that an idle team is quiet.
#[derive(Debug, Clone, Default)]
pub struct ScanCount(Arc<AtomicU64>);

impl ScanCount {
    /// Scans so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

// ANCHOR: claim_next
/// Scans the board and claims the first task that can start (or whose
/// lease ran out) for `name`. The scan is a snapshot, so a claim can still
/// lose to a faster teammate; then the next candidate is tried.
pub fn claim_next(
    board: &TaskBoard,
    name: &str,
    autonomy: &Autonomy,
    scans: &ScanCount,
) -> Option<Leased> {
    scans.add();
    let now = now_secs();
    board
        .claimable(now)
        .iter()
        .find_map(|task| board.claim_leased(&task.id, name, now, autonomy.lease).ok())
}
// ANCHOR_END: claim_next

/// Whole seconds since the Unix epoch: the clock leases are written in,
/// which every process on the machine shares.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The prompt for a task claimed from the board.
pub fn assignment(leased: &Leased) -> String {
    let task = &leased.task;
    let mut prompt = format!("[Auto-claimed task {}] {}", task.id, task.subject);
    if !task.description.is_empty() {
        prompt.push('\n');
        prompt.push_str(&task.description);
    }
    prompt
        .push_str("\nWhen it is done, call complete_task; then end your turn with a short report.");
    prompt
}
