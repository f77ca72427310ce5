//! The goal loop: `/goal <condition>` keeps the agent working until the
//! condition is met on trusted evidence, or a budget of turns is spent.
//!
//! Until this lesson a turn ended when the model stopped asking for tools:
//! the model alone decided that the work was done. A goal moves that
//! decision to the harness. Three parts make it, each in its own module:
//!
//! ```text
//!  /goal <condition> ──► Goal { objective, start = log.next_seq(), budget 20 }
//!                           │        └─► kickoff ──► continuation queue
//!                           ▼
//!  harness deliveries ──► EvidenceLog (seq, origin)   ◄── nothing else writes here
//!  (background, workflows)  │
//!                           ▼
//!  model ends a turn ──► on_stop ──► Evaluator(objective, log.since(start))
//!                                      ├─ ok ───────────────► completed, cleared, notice
//!                                      ├─ not ok, budget left ► continuation ──► queue
//!                                      └─ not ok, budget spent ► blocked, notice, stop
//!
//!  idle_work: external events first (they may be evidence), then the queue
//! ```
//!
//! * [`evidence`]: the log of what the harness delivered, by origin;
//! * [`evaluator`]: the judge's trait and the offline keyword matcher;
//! * [`model_evaluator`]: the model as judge, through the same model stack;
//! * [`prompts`]: the kickoff and continuation texts;
//! * [`command`]: `/goal`, `/goal clear`, `/goal <condition>`.
//!
//! The goal never enters the system prompt or the tools, so the request
//! prefix stays byte-stable while a goal is set: it travels in user
//! messages only.

pub mod command;
pub mod evaluator;
pub mod evidence;
pub mod model_evaluator;
pub mod prompts;

use std::sync::Arc;

use shared::model::Model;
use shared::notice::Notices;

use crate::background::Finished;
use crate::workflow::report::RunFinished;
use command::Command;
pub use evaluator::{Evaluator, KeywordEvaluator, Verdict};
pub use evidence::{Evidence, EvidenceLog, Origin};
pub use model_evaluator::ModelEvaluator;

/// The tag of the goal's notices.
pub const TAG: &str = "goal";

/// Continuation turns a goal may use before it is marked blocked, as in
/// the course's reference. The kickoff is not one of them.
pub const DEFAULT_BUDGET: usize = 20;

// ANCHOR: options
/// Which judge decides a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvaluatorChoice {
    /// [`KeywordEvaluator`]: offline and deterministic (the default, and
    /// what `main` uses with the demo model).
    #[default]
    Keyword,
    /// [`ModelEvaluator`]: a side query to the agent's model.
    Model,
}

/// What a caller chooses about goals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalOptions {
    pub evaluator: EvaluatorChoice,
    /// Continuation turns per goal.
    pub budget: usize,
}

impl Default for GoalOptions {
    fn default() -> Self {
        Self {
            evaluator: EvaluatorChoice::default(),
            budget: DEFAULT_BUDGET,
        }
    }
}
// ANCHOR_END: options

// ANCHOR: goal
/// Where a goal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalStatus {
    Active,
    /// The evaluator found it met.
    Completed,
    /// Its budget was spent before it was met.
    Blocked,
    /// The user cleared it, or set another.
    Cleared,
}

/// One goal and its counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    pub objective: String,
    pub status: GoalStatus,
    /// The first evidence sequence number that counts for it.
    pub start_seq: u64,
    pub budget: usize,
    /// Times the evaluator was asked.
    pub checks: usize,
    /// Continuation turns queued so far.
    pub continuations: usize,
    /// The evaluator's last reason.
    pub last_reason: Option<String>,
}
// ANCHOR_END: goal

/// The prompt waiting in the goal's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Queued {
    text: String,
    /// The kickoff is kept as it is; a continuation is rewritten with the
    /// newest reason when a later check finds the goal still not met.
    kickoff: bool,
}

/// What the gate decided when a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// No goal is set: the turn ends as it always did.
    NoGoal,
    Completed,
    /// Not met; a continuation is queued.
    Continuing,
    Blocked,
}

// ANCHOR: goal_loop
/// The session's goal, its evidence and its continuation queue.
pub struct GoalLoop {
    active: Option<Goal>,
    /// The goal before this one, for `/goal` once it is done.
    last: Option<Goal>,
    evidence: EvidenceLog,
    /// The continuation queue: the goal's own prompts, kept apart from the
    /// external events (background results, cron, team mail) that
    /// `idle_work` delivers before them. One slot is enough: a goal needs
    /// one "go on" at a time, and a turn that ends while one is still
    /// waiting (the user typed meanwhile) does not queue a second.
    queued: Option<Queued>,
    evaluator: Box<dyn Evaluator>,
    budget: usize,
    notices: Notices,
}
// ANCHOR_END: goal_loop

impl GoalLoop {
    /// No goal yet. The model evaluator, if chosen, asks `model` — the
    /// agent's recovery-wrapped stack — for `model_id`.
    pub fn new(
        options: &GoalOptions,
        model: Arc<dyn Model>,
        model_id: &str,
        notices: Notices,
    ) -> Self {
        let evaluator: Box<dyn Evaluator> = match options.evaluator {
            EvaluatorChoice::Keyword => Box::new(KeywordEvaluator),
            EvaluatorChoice::Model => Box::new(ModelEvaluator::new(model, model_id)),
        };
        Self {
            active: None,
            last: None,
            evidence: EvidenceLog::default(),
            queued: None,
            evaluator,
            budget: options.budget,
            notices,
        }
    }

    /// The goal being worked on, if any.
    pub fn active(&self) -> Option<&Goal> {
        self.active.as_ref()
    }

    /// The last goal that ended (completed, blocked or cleared).
    pub fn last(&self) -> Option<&Goal> {
        self.last.as_ref()
    }

    /// The evidence log.
    pub fn evidence(&self) -> &EvidenceLog {
        &self.evidence
    }

    // ANCHOR: record
    /// Records a finished background command as it is delivered to the
    /// model. Called only by the harness's delivery points.
    pub fn record_finished(&mut self, finished: &Finished) {
        let (origin, text) = evidence::from_finished(finished);
        self.evidence.record(origin, text);
    }

    /// Records a finished workflow run as it is delivered to the model.
    pub fn record_run(&mut self, finished: &RunFinished) {
        let (origin, text) = evidence::from_run(finished);
        self.evidence.record(origin, text);
    }
    // ANCHOR_END: record

    // ANCHOR: slash
    /// The answer to a `/goal` line; `None` for any other line.
    pub fn command(&mut self, line: &str) -> Option<String> {
        Some(match command::parse(line)? {
            Command::Status => self.status(),
            Command::Clear => self.clear(),
            Command::Set(objective) => self.set(objective),
        })
    }

    /// Sets `objective` as the goal: its evidence window opens now, and
    /// the kickoff waits in the queue for `idle_work`.
    pub fn set(&mut self, objective: String) -> String {
        let replaced = self.retire(GoalStatus::Cleared);
        self.queued = Some(Queued {
            text: prompts::kickoff(&objective),
            kickoff: true,
        });
        let answer = format!(
            "Goal set: {objective}\n\
             It is checked each time the agent stops, against results the harness delivers \
             from now on (what you or the model say does not count), for up to {} continuation \
             turns. /goal shows it; /goal clear drops it.",
            self.budget
        );
        self.active = Some(Goal {
            objective,
            status: GoalStatus::Active,
            start_seq: self.evidence.next_seq(),
            budget: self.budget,
            checks: 0,
            continuations: 0,
            last_reason: None,
        });
        match replaced {
            Some(old) => format!("{answer}\n(It replaces the goal: {})", old.objective),
            None => answer,
        }
    }

    /// Drops the goal and its queued prompt.
    pub fn clear(&mut self) -> String {
        match self.retire(GoalStatus::Cleared) {
            Some(goal) => format!("Goal cleared: {}", goal.objective),
            None => "No goal to clear.".to_string(),
        }
    }

    /// `/goal`.
    pub fn status(&self) -> String {
        let name = self.evaluator.name();
        match (&self.active, &self.last) {
            (Some(goal), _) => {
                command::render(goal, self.evidence.since(goal.start_seq).len(), name)
            }
            (None, Some(goal)) => format!(
                "No active goal. The last one:\n{}",
                command::render(goal, self.evidence.since(goal.start_seq).len(), name)
            ),
            (None, None) => "No goal. Set one with /goal <condition>.".to_string(),
        }
    }
    // ANCHOR_END: slash

    /// Ends the active goal with `status`, dropping its queued prompt.
    fn retire(&mut self, status: GoalStatus) -> Option<Goal> {
        self.queued = None;
        let mut goal = self.active.take()?;
        goal.status = status;
        self.last = Some(goal.clone());
        Some(goal)
    }

    // ANCHOR: gate
    /// The gate, when the model ends a turn: asks the evaluator about the
    /// trusted evidence since the goal was set, then completes the goal,
    /// queues a continuation, or marks the goal blocked.
    pub async fn after_turn(&mut self) -> Gate {
        let Some(goal) = self.active.as_ref() else {
            return Gate::NoGoal;
        };
        let evidence = self.evidence.since(goal.start_seq);
        let verdict = self.evaluator.evaluate(&goal.objective, &evidence).await;
        let Some(goal) = self.active.as_mut() else {
            return Gate::NoGoal;
        };
        goal.checks += 1;
        goal.last_reason = Some(verdict.reason.clone());
        let checks = goal.checks;
        if verdict.ok {
            let continuations = goal.continuations;
            self.retire(GoalStatus::Completed);
            self.notices.emit(
                TAG,
                format!(
                    "goal met after {checks} checks and {continuations} continuation turns: {}",
                    verdict.reason
                ),
            );
            return Gate::Completed;
        }
        if let Some(queued) = self.queued.as_mut() {
            // A prompt is already waiting (the user's line ran first):
            // it will go on, with the newest reason, and no budget is
            // spent twice.
            if !queued.kickoff {
                queued.text = prompts::continuation(&goal.objective, &verdict.reason);
            }
            self.notices.emit(
                TAG,
                format!(
                    "not met (check {checks}): {}; a continuation is already queued",
                    verdict.reason
                ),
            );
            return Gate::Continuing;
        }
        if goal.continuations < goal.budget {
            goal.continuations += 1;
            let used = goal.continuations;
            let budget = goal.budget;
            self.queued = Some(Queued {
                text: prompts::continuation(&goal.objective, &verdict.reason),
                kickoff: false,
            });
            self.notices.emit(
                TAG,
                format!(
                    "not met (check {checks}): {}; continuation {used}/{budget} queued",
                    verdict.reason
                ),
            );
            return Gate::Continuing;
        }
        let budget = goal.budget;
        let objective = goal.objective.clone();
        self.retire(GoalStatus::Blocked);
        self.notices.emit(
            TAG,
            format!(
                "goal blocked: {budget} continuation turns spent and still not met ({}). \
                 The agent stops here. Goal: {objective}. /goal shows it; /goal <condition> \
                 sets it again.",
                verdict.reason
            ),
        );
        Gate::Blocked
    }
    // ANCHOR_END: gate

    // ANCHOR: queue
    /// Whether a goal prompt waits in the queue.
    pub fn has_continuation(&self) -> bool {
        self.queued.is_some()
    }

    /// Takes the queued goal prompt, if there is one.
    pub fn take_continuation(&mut self) -> Option<String> {
        self.queued.take().map(|queued| queued.text)
    }
    // ANCHOR_END: queue
}
