//! Leases: claims that expire unless their owner keeps renewing them
//! (lesson 16).
//!
//! An autonomous teammate claims tasks by itself. If it dies half-way — its
//! process is killed, its task panics — a plain claim would keep the task
//! `in_progress` under its name forever, and nobody would do it. So a
//! teammate's claim is a *lease*: it holds until a time written in the task
//! file (`leaseUntil`), the teammate renews it while it works, and once the
//! time has passed without a renewal any idle teammate may claim the task
//! again. The new owner learns whose lease ran out, and tells the lead.
//!
//! Every step happens under the board's file lock, like lesson 12's claim,
//! so of any number of claimers exactly one wins a task, and a renewal never
//! races a reclaim. Times are seconds since the Unix epoch, which every
//! process on the machine shares; the caller passes "now", so tests choose
//! it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::board::{Refusal, TASKS_TAG, TaskBoard, io};
use super::task::{Status, Task, validate_id};

/// A claim that was granted, and whose lease it took over, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Leased {
    pub task: Task,
    /// The previous owner, when the task was taken over from an expired
    /// lease.
    pub reclaimed_from: Option<String>,
}

impl TaskBoard {
    // ANCHOR: claimable
    /// The tasks `claim_leased` would grant at `now`, in id order: pending
    /// ones whose dependencies are completed, and in-progress ones whose
    /// lease has run out. A snapshot: another claimer may take any of them
    /// first.
    pub fn claimable(&self, now: u64) -> Vec<Task> {
        // ANCHOR: exercise-s16-claimable
        let tasks = self.list();
        let by_id: BTreeMap<&str, &Task> =
            tasks.iter().map(|task| (task.id.as_str(), task)).collect();
        tasks
            .iter()
            .filter(|task| match task.status {
                Status::Pending => Self::waiting_for(task, &by_id).is_empty(),
                Status::InProgress => expired(task, now),
                Status::Completed => false,
            })
            .cloned()
            .collect()
        // ANCHOR_END: exercise-s16-claimable
    }
    // ANCHOR_END: claimable

    // ANCHOR: claim_leased
    /// Claims task `id` for `owner` with a lease of `lease` from `now`: a
    /// pending task whose dependencies are completed, or an in-progress one
    /// whose lease has expired. Read, check and write under the lock.
    pub fn claim_leased(
        &self,
        id: &str,
        owner: &str,
        now: u64,
        lease: Duration,
    ) -> Result<Leased, Refusal> {
        validate_id(id).map_err(Refusal::InvalidId)?;
        let (_lock, tasks) = self.locked()?;
        let by_id: BTreeMap<&str, &Task> =
            tasks.iter().map(|task| (task.id.as_str(), task)).collect();
        let Some(task) = by_id.get(id) else {
            return Err(Refusal::NotFound(id.to_string()));
        };
        let reclaimed_from = match task.status {
            Status::Pending => {
                let blockers = Self::waiting_for(task, &by_id);
                if !blockers.is_empty() {
                    return Err(Refusal::Blocked {
                        id: id.to_string(),
                        blockers,
                    });
                }
                None
            }
            Status::InProgress if expired(task, now) => task.owner.clone(),
            _ => {
                return Err(Refusal::Taken {
                    id: id.to_string(),
                    status: task.status,
                    owner: task.owner.clone(),
                });
            }
        };
        let claimed = Task {
            status: Status::InProgress,
            owner: Some(owner.to_string()),
            lease_until: Some(now.saturating_add(lease.as_secs())),
            ..(*task).clone()
        };
        self.store.save(&claimed).map_err(io)?;
        let how = match &reclaimed_from {
            Some(previous) => format!(" (reclaimed from {previous}, whose lease expired)"),
            None => String::new(),
        };
        self.notices.emit(
            TASKS_TAG,
            format!("{owner} claimed {}: {}{how}", claimed.id, claimed.subject),
        );
        Ok(Leased {
            task: claimed,
            reclaimed_from,
        })
    }
    // ANCHOR_END: claim_leased

    /// Extends `owner`'s lease on task `id` to `now + lease`. Refused when
    /// the task is no longer `owner`'s (another claimer took it over after
    /// the lease ran out) or no longer in progress.
    pub fn renew(&self, id: &str, owner: &str, now: u64, lease: Duration) -> Result<(), Refusal> {
        validate_id(id).map_err(Refusal::InvalidId)?;
        let (_lock, tasks) = self.locked()?;
        let Some(task) = tasks.iter().find(|task| task.id == id) else {
            return Err(Refusal::NotFound(id.to_string()));
        };
        if task.status != Status::InProgress || task.owner.as_deref() != Some(owner) {
            return Err(Refusal::Taken {
                id: id.to_string(),
                status: task.status,
                owner: task.owner.clone(),
            });
        }
        let renewed = Task {
            lease_until: Some(now.saturating_add(lease.as_secs())),
            ..task.clone()
        };
        self.store.save(&renewed).map_err(io)
    }
}

/// Whether `task`'s lease ran out before `now`. A claim without a lease
/// (made by hand) never expires.
fn expired(task: &Task, now: u64) -> bool {
    task.lease_until.is_some_and(|until| until < now)
}
