//! The goal loop: `/goal <condition>` keeps the agent working until the
//! condition is met on trusted evidence — or, with `--check <command>`,
//! until a command the harness runs itself exits 0 — or until the goal
//! stops: blocked (its budget of turns spent, or too many turns in a row
//! without new evidence) or given up by the model as impossible.
//!
//! Until this lesson a turn ended when the model stopped asking for tools:
//! the model alone decided that the work was done. A goal moves that
//! decision to the harness. The parts, each in its own module:
//!
//! ```text
//!  /goal <condition> [--check <command>]
//!        ──► Goal { objective, check, start = log.next_seq(), budget 20 }
//!                           │        └─► kickoff ──► continuation queue
//!                           ▼
//!  harness deliveries ──► EvidenceLog (seq, origin,     ◄── nothing else writes here
//!  (background, workflows)  command, exit status, output)
//!                           ▼
//!  model ends a turn ──► on_stop ──► check: run it; exit 0 = met, else not
//!                                    no check: Evaluator(objective, log.since(start))
//!                          ├─ met ────────────────────────► completed, cleared, notice
//!                          ├─ "GOAL IMPOSSIBLE: why" ─────► impossible (never met), notice
//!                          ├─ 8 continuations, nothing new ► blocked, notice, stop
//!                          ├─ not met, budget left ───────► continuation ──► queue
//!                          └─ not met, budget spent ──────► blocked, notice, stop
//!
//!  idle_work: external events first (they may be evidence), then the queue
//! ```
//!
//! * [`evidence`]: the log of what the harness delivered and observed;
//! * [`check`]: the command the harness runs for `--check`;
//! * [`evaluator`]: the judge's trait and the offline keyword matcher;
//! * [`model_evaluator`]: the model as judge, through the same model stack;
//! * [`prompts`]: the kickoff and continuation texts, and the marker the
//!   model writes to give up;
//! * [`command`]: `/goal`, `/goal clear`, `/goal <condition>`.
//!
//! What the model cannot do is write evidence: every entry is made by the
//! harness from what it ran and saw. What it can do is choose what runs in
//! the background, and `echo tests passed` really prints those words; the
//! keyword matcher takes them (from a command that exits 0), the model
//! judge is shown the command. Only a check is out of the model's reach.
//!
//! The goal never enters the system prompt or the tools, so the request
//! prefix stays byte-stable while a goal is set: it travels in user
//! messages only, and so does the way to give up (a marker line in the
//! model's reply, not a tool that would come and go).

pub mod check;
pub mod command;
pub mod evaluator;
pub mod evidence;
pub mod model_evaluator;
pub mod prompts;

use std::sync::Arc;
use std::time::Duration;

use shared::model::Model;
use shared::notice::Notices;
use shared::settings::InvalidSetting;
use shared::text::plural;
use shared::tools::Workspace;

use crate::background::Finished;
use crate::workflow::report::RunFinished;
pub use check::{CheckRun, DEFAULT_CHECK_TIMEOUT};
use command::Command;
pub use evaluator::{Evaluator, KeywordEvaluator, Verdict};
pub use evidence::{Evidence, EvidenceLog, Origin, Outcome};
pub use model_evaluator::ModelEvaluator;

/// The tag of the goal's notices.
pub const TAG: &str = "goal";

/// Continuation turns a goal may use before it is marked blocked, as in
/// the course's reference. The kickoff is not one of them.
pub const DEFAULT_BUDGET: usize = 20;

/// Continuation turns in a row that may bring no new trusted evidence
/// before the goal is marked blocked: a goal that is going nowhere stops
/// there instead of spending the rest of its budget.
pub const DEFAULT_NO_PROGRESS_LIMIT: usize = 8;

/// The variable that overrides [`GoalOptions::budget`] (and, under it,
/// the settings file's `goal.budget`).
pub const ENV_BUDGET: &str = "GOAL_BUDGET";
/// The variable for [`GoalOptions::no_progress_limit`]
/// (`goal.no_progress_limit`).
pub const ENV_NO_PROGRESS_LIMIT: &str = "GOAL_NO_PROGRESS_LIMIT";
/// The variable for [`GoalOptions::check_timeout`], in seconds
/// (`goal.check_timeout_secs`).
pub const ENV_CHECK_TIMEOUT_SECS: &str = "GOAL_CHECK_TIMEOUT_SECS";

// ANCHOR: options
/// Which judge decides a goal that has no check.
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
    /// Continuation turns in a row without new trusted evidence before the
    /// goal is blocked.
    pub no_progress_limit: usize,
    /// How long a goal's `--check` command may run.
    pub check_timeout: Duration,
}

impl Default for GoalOptions {
    fn default() -> Self {
        Self {
            evaluator: EvaluatorChoice::default(),
            budget: DEFAULT_BUDGET,
            no_progress_limit: DEFAULT_NO_PROGRESS_LIMIT,
            check_timeout: DEFAULT_CHECK_TIMEOUT,
        }
    }
}

impl GoalOptions {
    /// The same options with the numbers `lookup` finds (each at least 1).
    pub fn with_overrides(
        mut self,
        lookup: &impl Fn(&str) -> Option<String>,
    ) -> Result<Self, InvalidSetting> {
        use shared::settings::number;
        if let Some(budget) = number(lookup, ENV_BUDGET, 1)? {
            self.budget = budget;
        }
        if let Some(limit) = number(lookup, ENV_NO_PROGRESS_LIMIT, 1)? {
            self.no_progress_limit = limit;
        }
        if let Some(secs) = number(lookup, ENV_CHECK_TIMEOUT_SECS, 1)? {
            self.check_timeout = Duration::from_secs(secs);
        }
        Ok(self)
    }
}
// ANCHOR_END: options

// ANCHOR: goal
/// Where a goal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalStatus {
    Active,
    /// Met: its check exited 0, or (without a check) the evaluator found
    /// it met.
    Completed,
    /// Stopped unmet: its budget was spent, or too many continuations in a
    /// row brought no new trusted evidence ([`Goal::ended`] says which).
    Blocked,
    /// The model gave it up as impossible, with a reason. Never met.
    Impossible,
    /// The user cleared it, or set another.
    Cleared,
}

/// One goal and its counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    pub objective: String,
    pub status: GoalStatus,
    /// The command whose exit status alone decides the goal (`--check`).
    pub check: Option<String>,
    /// The first evidence sequence number that counts for it.
    pub start_seq: u64,
    pub budget: usize,
    /// Times the goal was checked (the check run or the evaluator asked).
    pub checks: usize,
    /// Continuation turns queued so far: what the budget counts.
    pub continuations: usize,
    /// Continuation turns that ran: taken from the queue and sent as a
    /// turn. One queued and dropped unrun (the goal ended first) is not
    /// among them.
    pub continuations_run: usize,
    /// Continuations queued since trusted evidence last arrived (or the
    /// check's result last changed).
    pub stalled: usize,
    /// The last reason it was found met or not.
    pub last_reason: Option<String>,
    /// The check's last run.
    pub last_check: Option<CheckRun>,
    /// Why it ended, when it was blocked or given up.
    pub ended: Option<String>,
    /// The evidence sequence number the next check reads as new.
    seen_seq: u64,
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
    /// The model gave the goal up.
    Impossible,
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
    /// Where a check runs.
    workspace: Workspace,
    options: GoalOptions,
    notices: Notices,
}
// ANCHOR_END: goal_loop

impl GoalLoop {
    /// No goal yet. The model evaluator, if chosen, asks `model` — the
    /// agent's recovery-wrapped stack — for `model_id`; checks run in
    /// `workspace`.
    pub fn new(
        options: &GoalOptions,
        model: Arc<dyn Model>,
        model_id: &str,
        workspace: Workspace,
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
            workspace,
            options: options.clone(),
            notices,
        }
    }

    /// The goal being worked on, if any.
    pub fn active(&self) -> Option<&Goal> {
        self.active.as_ref()
    }

    /// The last goal that ended (completed, blocked, impossible or
    /// cleared).
    pub fn last(&self) -> Option<&Goal> {
        self.last.as_ref()
    }

    /// The evidence log.
    pub fn evidence(&self) -> &EvidenceLog {
        &self.evidence
    }

    // ANCHOR: record
    /// Records a finished background command as it is delivered to the
    /// model: its command, the exit status the background manager saw,
    /// its output. Called only by the harness's delivery points.
    pub fn record_finished(&mut self, finished: &Finished) {
        self.evidence.record(evidence::from_finished(finished));
    }

    /// Records a finished workflow run as it is delivered to the model.
    pub fn record_run(&mut self, finished: &RunFinished) {
        self.evidence.record(evidence::from_run(finished));
    }
    // ANCHOR_END: record

    // ANCHOR: slash
    /// The answer to a `/goal` line; `None` for any other line.
    pub fn command(&mut self, line: &str) -> Option<String> {
        Some(match command::parse(line)? {
            Command::Status => self.status(),
            Command::Clear => self.clear(),
            Command::Set { objective, check } => self.set(objective, check),
            Command::Invalid(why) => why,
        })
    }

    /// Sets `objective` as the goal, decided by `check` if there is one:
    /// its evidence window opens now, and the kickoff waits in the queue
    /// for `idle_work`.
    pub fn set(&mut self, objective: String, check: Option<String>) -> String {
        let replaced = self.retire(GoalStatus::Cleared);
        self.queued = Some(Queued {
            text: prompts::kickoff(&objective, check.as_deref()),
            kickoff: true,
        });
        let judged = match &check {
            Some(command) => format!(
                "It is met only when `{command}`, which the harness runs in the workspace each \
                 time the agent stops (timeout {} s), exits 0 — whatever anyone says.",
                self.options.check_timeout.as_secs()
            ),
            None => "It is checked each time the agent stops, against results the harness \
                     delivers from now on (what you or the model say does not count)."
                .to_string(),
        };
        let answer = format!(
            "Goal set: {objective}\n\
             {judged} Up to {} continuation turns, fewer if {} in a row bring no new \
             evidence. /goal shows it; /goal clear drops it.",
            self.options.budget, self.options.no_progress_limit
        );
        let start_seq = self.evidence.next_seq();
        self.active = Some(Goal {
            objective,
            status: GoalStatus::Active,
            check,
            start_seq,
            budget: self.options.budget,
            checks: 0,
            continuations: 0,
            continuations_run: 0,
            stalled: 0,
            last_reason: None,
            last_check: None,
            ended: None,
            seen_seq: start_seq,
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
        let render = |goal: &Goal| {
            command::render(
                goal,
                self.evidence.since(goal.start_seq).len(),
                self.evaluator.name(),
                self.options.no_progress_limit,
                self.options.check_timeout,
            )
        };
        match (&self.active, &self.last) {
            (Some(goal), _) => render(goal),
            (None, Some(goal)) => format!("No active goal. The last one:\n{}", render(goal)),
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

    /// Ends the active goal unmet, saying why in `/goal` and in a notice.
    fn stop(&mut self, status: GoalStatus, why: String, notice: String) {
        if let Some(goal) = self.active.as_mut() {
            goal.ended = Some(why);
        }
        self.retire(status);
        self.notices.emit(TAG, notice);
    }

    // ANCHOR: judge
    /// Whether the goal is met now: a goal with a check runs it (exit
    /// status 0, and nothing else, meets it); one without asks the
    /// evaluator about the trusted evidence since the goal was set.
    async fn judge(&self, goal: &Goal) -> (Verdict, Option<CheckRun>) {
        // ANCHOR: exercise-s21-judge
        match &goal.check {
            Some(command) => {
                let timeout = self.options.check_timeout;
                let run = check::run(&self.workspace, command, timeout).await;
                let verdict = Verdict {
                    ok: run.passed(),
                    reason: run.describe(command, timeout),
                };
                (verdict, Some(run))
            }
            None => {
                let evidence = self.evidence.since(goal.start_seq);
                let verdict = self.evaluator.evaluate(&goal.objective, &evidence).await;
                (verdict, None)
            }
        }
        // ANCHOR_END: exercise-s21-judge
    }
    // ANCHOR_END: judge

    // ANCHOR: gate
    /// The gate, when the model ends a turn with `final_reply`: judges the
    /// goal, then completes it, ends it as impossible if the reply gives
    /// it up, marks it blocked if it is going nowhere or its budget is
    /// spent, or queues a continuation.
    pub async fn after_turn(&mut self, final_reply: &str) -> Gate {
        let Some(goal) = self.active.as_ref() else {
            return Gate::NoGoal;
        };
        let (verdict, run) = self.judge(goal).await;
        let next_seq = self.evidence.next_seq();
        let limit = self.options.no_progress_limit;
        let Some(goal) = self.active.as_mut() else {
            return Gate::NoGoal;
        };
        goal.checks += 1;
        goal.last_reason = Some(verdict.reason.clone());
        // Progress: a delivery since the last check, or a check that says
        // something new.
        let check_changed = run.is_some() && run != goal.last_check;
        if next_seq > goal.seen_seq || check_changed {
            goal.stalled = 0;
        }
        goal.seen_seq = next_seq;
        if run.is_some() {
            goal.last_check = run;
        }
        let detail = goal.last_check.as_ref().map(|run| run.tail.clone());
        let checks = goal.checks;
        if verdict.ok {
            // The turns that ran, not the ones queued: a continuation
            // still waiting now is dropped unrun.
            let ran = plural(
                goal.continuations_run,
                "continuation turn",
                "continuation turns",
            );
            self.retire(GoalStatus::Completed);
            self.notices.emit(
                TAG,
                format!(
                    "goal met after {checks} checks and {ran}: {}",
                    verdict.reason
                ),
            );
            return Gate::Completed;
        }
        // Giving up is read only after the judge: evidence that meets the
        // goal wins over a model that did not see it coming.
        if let Some(why) = prompts::given_up(final_reply) {
            let objective = goal.objective.clone();
            self.stop(
                GoalStatus::Impossible,
                format!("the model gave it up as impossible: {why}"),
                format!(
                    "goal ended as impossible, not met — the model says: {why}. Goal: \
                     {objective}. /goal <condition> sets it again."
                ),
            );
            return Gate::Impossible;
        }
        if let Some(queued) = self.queued.as_mut() {
            // A prompt is already waiting (the user's line ran first):
            // it will go on, with the newest reason, and no budget is
            // spent twice.
            if !queued.kickoff {
                queued.text =
                    prompts::continuation(&goal.objective, &verdict.reason, detail.as_deref());
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
        if goal.stalled >= limit {
            let objective = goal.objective.clone();
            let (used, budget) = (goal.continuations, goal.budget);
            self.stop(
                GoalStatus::Blocked,
                format!("{limit} continuation turns in a row brought no new trusted evidence"),
                format!(
                    "goal blocked: {limit} continuation turns in a row brought no new trusted \
                     evidence ({}), so the agent stops here instead of spending the rest of its \
                     budget ({used}/{budget} used). Goal: {objective}. /goal shows it; \
                     /goal <condition> sets it again.",
                    verdict.reason
                ),
            );
            return Gate::Blocked;
        }
        if goal.continuations < goal.budget {
            goal.continuations += 1;
            goal.stalled += 1;
            let used = goal.continuations;
            let budget = goal.budget;
            self.queued = Some(Queued {
                text: prompts::continuation(&goal.objective, &verdict.reason, detail.as_deref()),
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
        self.stop(
            GoalStatus::Blocked,
            format!("{budget} continuation turns spent"),
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

    /// Takes the queued goal prompt, if there is one, to send as the next
    /// turn: a continuation taken is one that runs.
    pub fn take_continuation(&mut self) -> Option<String> {
        let queued = self.queued.take()?;
        if let (false, Some(goal)) = (queued.kickoff, self.active.as_mut()) {
            goal.continuations_run += 1;
        }
        Some(queued.text)
    }
    // ANCHOR_END: queue
}
