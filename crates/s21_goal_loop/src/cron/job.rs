//! A scheduled job: what to run (a prompt for the agent) and when (a cron
//! expression).
//!
//! This is the record that is shown to the user, kept in memory by the
//! [`Schedule`](super::Schedule) and, for durable jobs, saved to disk by the
//! [`store`](super::store). Its field names are part of the on-disk format,
//! so they must not change.

use serde::{Deserialize, Serialize};

use super::expr::CronExpr;
use super::field::CronError;

/// One scheduled job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronJob {
    /// A short unique id such as `cron_0007`, used to cancel the job. It is
    /// empty until a [`Schedule`](super::Schedule) assigns one.
    pub id: String,
    /// The cron expression, as the user wrote it.
    pub cron: String,
    /// The prompt to give the agent each time the job fires.
    pub prompt: String,
    /// `true` to fire every time the expression matches; `false` to fire
    /// once and then be removed.
    pub recurring: bool,
    /// `true` to save the job to disk so that it survives a restart;
    /// `false` to keep it only for this session.
    pub durable: bool,
}

impl CronJob {
    /// A job without an id yet; [`Schedule::add`](super::Schedule::add)
    /// gives it one.
    pub fn new(
        cron: impl Into<String>,
        prompt: impl Into<String>,
        recurring: bool,
        durable: bool,
    ) -> CronJob {
        CronJob {
            id: String::new(),
            cron: cron.into(),
            prompt: prompt.into(),
            recurring,
            durable,
        }
    }

    /// Parses the job's cron expression.
    ///
    /// # Errors
    ///
    /// Returns the parse error if the expression is invalid.
    pub fn expr(&self) -> Result<CronExpr, CronError> {
        CronExpr::parse(&self.cron)
    }

    /// `"recurring"` or `"one-shot"`, for listings.
    pub fn kind(&self) -> &'static str {
        if self.recurring {
            "recurring"
        } else {
            "one-shot"
        }
    }

    /// `"durable"` or `"session"`, for listings: whether the job outlives
    /// this session.
    pub fn lifetime(&self) -> &'static str {
        if self.durable { "durable" } else { "session" }
    }
}
