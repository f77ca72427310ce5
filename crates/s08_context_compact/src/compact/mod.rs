//! Context compaction: four layers before every model call, cheap first,
//! and one more when the provider says the prompt is too long.
//!
//! ```text
//! before_model_call ─► 1 budget ─► 2 snip ─► 3 micro ─► over threshold? ─► 4 summary
//!                      (disk)      (drop)    (clear)    or compact tool?    (1 API call)
//! call_model ─► prompt too long? ─► reactive: summary (or aggressive snip), retry once
//! ```
//!
//! * [`budget`]: the newest message's largest tool results go to disk when
//!   together they exceed a budget.
//! * [`snip`]: past a number of messages, the middle of the history is
//!   dropped, between whole rounds.
//! * [`micro`]: old tool results keep their blocks but lose their content.
//! * [`batch`]: when snip and micro-compact act — rarely, and together.
//! * [`summary`]: the transcript is saved, the model summarises, and the
//!   summary replaces the history.
//! * [`reactive`]: the same summary (or a harder snip) when the provider
//!   refuses a request as too long, then one retry.
//! * [`tool`]: the `compact` tool, with which the model asks for layer 4.
//!
//! The invariant all of them keep: no layer ever separates a `tool_use`
//! from its `tool_result`. The three cheap layers change only contents and
//! cut only between rounds; the summary replaces whole rounds.
//!
//! [`Compactor`] holds the settings ([`CompactConfig`]), the model for the
//! side calls, and the circuit breaker's count.

pub mod budget;
pub mod config;
pub mod estimate;
pub mod files;
pub mod micro;
pub mod reactive;
pub mod snip;
pub mod summary;
pub mod tool;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use shared::cli::Setup;
use shared::model::Model;
use shared::notice::Notices;
use shared::protocol::Message;
use shared::text::plural;

use crate::dispatch::ToolRegistry;
pub use budget::BudgetReport;
pub use config::CompactConfig;
pub use estimate::estimate_tokens;
pub use reactive::{ReactiveOutcome, send_with_reactive_compaction};
use summary::SummaryError;
use tool::Flags;

/// What layer 4 did before one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryOutcome {
    /// The history was replaced; the transcript is at this path (relative
    /// to the workspace).
    Replaced { transcript: String },
    /// The summary failed and the history was left as the cheap layers
    /// made it.
    Failed(String),
    /// The circuit breaker is open: no summary was attempted.
    Skipped,
}

/// What the pipeline did before one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineReport {
    pub budget: BudgetReport,
    /// Messages dropped by snip.
    pub snipped: usize,
    /// Tool results cleared by micro-compact.
    pub cleared: usize,
    /// The estimate after the three cheap layers.
    pub tokens: usize,
    /// Whether the `compact` tool asked for a summary.
    pub requested: bool,
    /// Layer 4, if it was triggered.
    pub summary: Option<SummaryOutcome>,
}

// ANCHOR: compactor
/// The compaction layers and their state, owned by the lesson's hooks.
pub struct Compactor {
    /// The thresholds; tests and embedders may change them at any time.
    pub config: CompactConfig,
    root: PathBuf,
    model: Arc<dyn Model>,
    model_id: String,
    flags: Arc<Flags>,
    /// Failed summaries in a row; transient failures do not count.
    failures: usize,
    /// The last prompt the user typed, repeated in every summary message.
    current_request: Option<String>,
    /// Where each layer reports what it did.
    notices: Notices,
}

impl Compactor {
    /// Compaction in the setup's workspace, summarising with its model,
    /// reporting to its notices.
    pub fn new(setup: &Setup, config: CompactConfig) -> Self {
        Self {
            config,
            root: setup.workspace().root().to_path_buf(),
            model: setup.model().clone(),
            model_id: setup.model_id().to_owned(),
            flags: Arc::new(Flags::default()),
            failures: 0,
            current_request: None,
            notices: setup.notices().clone(),
        }
    }

    /// Adds the `compact` tool to the dispatch map.
    pub fn register(&self, tools: &mut ToolRegistry) {
        tool::register(tools, self.flags.clone());
    }

    /// Remembers the user's latest prompt for the summary message.
    pub fn note_prompt(&mut self, prompt: &str) {
        self.current_request = Some(prompt.to_string());
    }

    /// Failed summaries in a row so far, transient failures left out.
    pub fn summary_failures(&self) -> usize {
        self.failures
    }

    /// Whether summaries have been given up for this session.
    pub fn breaker_open(&self) -> bool {
        self.flags.breaker_open.load(Ordering::SeqCst)
    }
}
// ANCHOR_END: compactor

// ANCHOR: batch
/// Layers 2 and 3 as the pipeline runs them: nothing until one of them is
/// due — the history is over [`CompactConfig::max_messages`], or the
/// results micro-compact would clear hold more than
/// [`CompactConfig::micro_batch_chars`] — and then both do all they can:
/// snip down to [`CompactConfig::snip_to_messages`], and clear every old
/// result. Returns the messages dropped and the results cleared.
///
/// What costs is not how much a batch removes but that it happens: it
/// changes the history from some point on, and the provider's prompt cache
/// has to store everything after that point again (chapter 10). So the
/// two layers act rarely, and together, and in between the history only
/// grows at its end.
pub fn batch(history: &mut Vec<Message>, config: &CompactConfig) -> (usize, usize) {
    let keep = config.keep_recent_tool_results;
    let due = history.len() > config.max_messages
        || micro::pending_chars(history, keep, config.min_clear_chars) > config.micro_batch_chars;
    if !due {
        return (0, 0);
    }
    let low = config.snip_to_messages.min(config.max_messages);
    let snipped = snip::snip(history, low, config.keep_head_messages);
    let cleared = micro::micro_compact(history, keep, config.min_clear_chars);
    (snipped, cleared)
}
// ANCHOR_END: batch

// ANCHOR: pipeline
impl Compactor {
    /// The pipeline, run before every model call: the three cheap layers,
    /// then a summary if the history is still over the threshold or the
    /// model asked for one.
    pub async fn before_model_call(&mut self, history: &mut Vec<Message>) -> PipelineReport {
        // ANCHOR: exercise-s08-pipeline
        let config = &self.config;
        // The order matters: the budget keeps full text on disk, so it runs
        // before the layers that throw text away.
        let budget = budget::apply(history, &self.root, config);
        let (snipped, cleared) = batch(history, config);
        let mut report = PipelineReport {
            budget,
            snipped,
            cleared,
            tokens: estimate_tokens(history),
            requested: self.flags.requested.swap(false, Ordering::SeqCst),
            summary: None,
        };
        self.report_cheap_layers(&report);

        let over = report.tokens > self.config.threshold_tokens;
        if over || report.requested {
            let outcome = if self.breaker_open() {
                tracing::debug!(
                    tokens = report.tokens,
                    "over the threshold; summaries are off"
                );
                SummaryOutcome::Skipped
            } else {
                self.auto_compact(history, report.tokens, report.requested)
                    .await
            };
            report.summary = Some(outcome);
        }
        report
        // ANCHOR_END: exercise-s08-pipeline
    }

    /// Layer 4 over the whole history.
    async fn auto_compact(
        &mut self,
        history: &mut Vec<Message>,
        tokens: usize,
        requested: bool,
    ) -> SummaryOutcome {
        let why = if requested {
            "the model called compact".to_string()
        } else {
            format!("~{tokens} tokens > {}", self.config.threshold_tokens)
        };
        let cut = history.len();
        match self.summarise_prefix(history, cut, "Compacted").await {
            Ok(transcript) => {
                let after = estimate_tokens(history);
                self.notice(&format!(
                    "auto compact ({why}): transcript saved to {transcript}; \
                     history replaced by a summary (~{after} tokens)"
                ));
                if after > self.config.threshold_tokens {
                    // A summary that does not get under the threshold would
                    // be asked for again before every call.
                    self.record_failure("the summary is itself over the threshold");
                } else {
                    self.failures = 0;
                }
                SummaryOutcome::Replaced { transcript }
            }
            Err(error) => {
                self.summary_failed(&error);
                SummaryOutcome::Failed(error.to_string())
            }
        }
    }
}
// ANCHOR_END: pipeline

// ANCHOR: summarise_prefix
impl Compactor {
    /// Saves the transcript of the whole `history`, then replaces
    /// `history[..cut]` by one user message with a summary of it (see
    /// [`summary::replace_prefix`] for what `cut` may be). On error the
    /// history is unchanged.
    async fn summarise_prefix(
        &mut self,
        history: &mut Vec<Message>,
        cut: usize,
        label: &str,
    ) -> Result<String, SummaryError> {
        let transcript =
            summary::write_transcript(&self.root, history).map_err(SummaryError::Transcript)?;
        let text = summary::summarize(
            self.model.as_ref(),
            &self.model_id,
            &history[..cut],
            &self.config,
        )
        .await?;
        let message =
            summary::summary_message(label, &text, &transcript, self.current_request.as_deref());
        summary::replace_prefix(history, cut, message);
        Ok(transcript)
    }

    /// Reports a summary that could not be made, and counts it towards the
    /// breaker unless it was transient. A rate limit, an overload or a cut
    /// stream says nothing about the summary itself: counting it would let a
    /// minute's outage turn summaries off for the rest of the session.
    /// (Lesson 11 retries such failures before they get here; one that still
    /// arrives means the retries ran out, and it is not counted either.)
    fn summary_failed(&mut self, error: &SummaryError) {
        if error.is_transient() {
            self.notice(&format!(
                "summary failed: {error}; a transient failure, so it does not count towards \
                 the circuit breaker ({}/{} so far)",
                self.failures, self.config.max_summary_failures
            ));
            return;
        }
        self.record_failure(&error.to_string());
    }

    /// Counts a failed summary; the last one allowed opens the breaker.
    fn record_failure(&mut self, why: &str) {
        self.failures += 1;
        let max = self.config.max_summary_failures;
        self.notice(&format!("summary failed ({}/{max}): {why}", self.failures));
        if self.failures >= max {
            self.flags.breaker_open.store(true, Ordering::SeqCst);
            self.notice(&format!(
                "circuit breaker open: {max} summaries failed in a row, so no more will be \
                 attempted this session; the cheaper layers carry on"
            ));
            tracing::warn!(failures = self.failures, "summary circuit breaker opened");
        }
    }
}
// ANCHOR_END: summarise_prefix

impl Compactor {
    fn report_cheap_layers(&self, report: &PipelineReport) {
        let budget = &report.budget;
        if !budget.saved.is_empty() {
            self.notice(&format!(
                "tool-result budget: {} chars over {}; saved {} to {}/ ({} → {} chars)",
                budget.chars_before,
                self.config.tool_result_budget_chars,
                plural(budget.saved.len(), "result", "results"),
                files::TOOL_RESULTS_DIR,
                budget.chars_before,
                budget.chars_after
            ));
        }
        if report.snipped > 0 {
            self.notice(&format!(
                "snip: dropped {} from the middle of the conversation",
                plural(report.snipped, "message", "messages")
            ));
        }
        if report.cleared > 0 {
            self.notice(&format!(
                "micro-compact: cleared {}",
                plural(report.cleared, "old tool result", "old tool results")
            ));
        }
        tracing::debug!(
            tokens = report.tokens,
            threshold = self.config.threshold_tokens,
            "context estimate after the cheap layers"
        );
    }
}

/// The tag of every notice compaction emits.
pub const COMPACT_TAG: &str = "compact";

impl Compactor {
    /// Reports what a layer did, as a `[compact]` notice.
    fn notice(&self, text: &str) {
        self.notices.emit(COMPACT_TAG, text);
    }
}
