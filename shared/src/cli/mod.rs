//! The terminal front end every lesson binary uses.
//!
//! A lesson's `main` is one call:
//!
//! ```ignore
//! shared::cli::main(LESSON, |setup| Ok(my_lesson::agent(setup)))
//! ```
//!
//! This module does the rest: parse the flags, load `.env` ([`load_dotenv`],
//! once), pick the model (the demo model when none is configured), open the
//! workspace, then run either one `-p` prompt or a REPL. Text streams as it
//! arrives and tool calls are echoed. Ctrl-C cancels the running turn, not
//! the program, and an API error prints one line and leaves the REPL
//! running.
//!
//! With each lesson's `main`, this module is the edge where the process's
//! environment is read (`.env`, the model's variables, `RUST_LOG`); the
//! code below it takes what it needs as arguments.
//!
//! One [`TerminalPrinter`] serves the whole session, turns and the waits
//! between them alike: it draws the live progress lines of background work
//! (lesson 20's workflow runs), and everything the front end writes goes
//! through it, so that nothing is written through those lines.

mod args;
mod ask;
mod input;
mod live;
mod render;
mod repl;

use std::process::ExitCode;
use std::sync::{Arc, Once};

use anyhow::Context;
use clap::Parser;

pub use args::{CommonArgs, LessonArgs};
pub use ask::{TerminalAnswer, ask_yes_no, show_answered};
pub use render::{TerminalPrinter, describe_input};

use crate::agent::{Agent, TurnError, TurnOutcome};
use crate::hooks::Hooks;
use crate::model::Model;
use crate::model::config::select_model;
use crate::model::scripted::DemoModel;
use crate::notice::Notices;
use crate::protocol::{Message, StopReason, Usage};
use crate::settings::from_env;
use crate::tools::Workspace;
use tokio_util::sync::CancellationToken;

/// What a lesson tells the front end about itself.
#[derive(Debug, Clone, Copy)]
pub struct Lesson {
    /// The short name used in the prompt, e.g. `"s01"`.
    pub id: &'static str,
    /// The chapter title, shown at start-up.
    pub title: &'static str,
    /// The lesson's demo script (`demo.json`), embedded with `include_str!`.
    pub demo_script: &'static str,
    /// How the script becomes the demo model
    /// ([`demo_model`](crate::model::scripted::demo_model) unless the
    /// lesson's script has parts of its own).
    pub demo_model: DemoModel,
}

/// Everything a lesson needs to build its agent.
#[derive(Clone)]
pub struct Setup {
    /// The directory the tools are confined to.
    workspace: Workspace,
    /// The model the flags and environment chose.
    model: Arc<dyn Model>,
    /// The model id sent with each request.
    model_id: String,
    /// Where the lesson's mechanisms emit their notices; the agent
    /// [`agent`](Setup::agent) makes relays this same queue.
    notices: Notices,
}

impl Setup {
    /// A setup with a fresh notice queue.
    pub fn new(workspace: Workspace, model: Arc<dyn Model>, model_id: impl Into<String>) -> Self {
        Self {
            workspace,
            model,
            model_id: model_id.into(),
            notices: Notices::new(),
        }
    }

    /// The same setup, emitting into `notices` (a subagent's or a
    /// teammate's own queue) instead of a fresh one.
    pub fn with_notices(mut self, notices: Notices) -> Self {
        self.notices = notices;
        self
    }

    /// The same setup with its model replaced by what `wrap` makes of it
    /// (lesson 11 puts its recovery stack around the model here, so every
    /// mechanism built from the setup calls through it).
    pub fn map_model(mut self, wrap: impl FnOnce(Arc<dyn Model>) -> Arc<dyn Model>) -> Self {
        self.model = wrap(self.model);
        self
    }

    /// The directory the tools are confined to.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The model the flags and environment chose (wrapped, once a lesson
    /// called [`map_model`](Setup::map_model)).
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    /// The model id sent with each request.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Where the lesson's mechanisms emit their notices.
    pub fn notices(&self) -> &Notices {
        &self.notices
    }

    /// The agent that runs `hooks` with this setup's model and id, relaying
    /// the notices the mechanisms emit into this setup's queue.
    pub fn agent<H: Hooks>(self, hooks: H) -> Agent<H> {
        Agent::new(self.model, self.model_id, hooks).with_notices(self.notices)
    }

    /// The setup a lesson's binary makes from its flags, and the one place
    /// flags, `.env` and the environment are read for it: `.env` is loaded
    /// ([`load_dotenv`], once per process), the model is the one the flags
    /// and the environment choose (else `lesson`'s demo model, with a
    /// notice saying so), and the workspace is `--workdir`, else — for the
    /// demo model, which writes files — a new scratch directory, else the
    /// current directory. What it chose is said on standard error. A
    /// program of its own that builds a lesson's agent (`examples/library`)
    /// calls this instead of choosing again.
    pub fn from_args(lesson: Lesson, args: &CommonArgs) -> anyhow::Result<Self> {
        load_dotenv();
        let selected = select_model(
            &args.model_choice(),
            &from_env,
            lesson.demo_script,
            lesson.demo_model,
        )?;
        if let Some(notice) = &selected.notice {
            eprintln!("{notice}");
        }
        let root = match &args.workdir {
            Some(dir) => dir.clone(),
            // The demo writes files; with no directory named, it must not
            // write them into whatever directory the user happens to be in
            // (often this repository's checkout).
            None if selected.model.provider() == "demo" => {
                let dir = scratch_dir(lesson)?;
                eprintln!(
                    "[demo model] Working in a new scratch directory, {} (choose one with --workdir).",
                    dir.display()
                );
                dir
            }
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let workspace = Workspace::new(&root)
            .with_context(|| format!("cannot open the workspace {}", root.display()))?;
        Ok(Self::new(workspace, selected.model, selected.model_id))
    }
}

/// Parses [`LessonArgs`] and runs the lesson. For lessons without flags of
/// their own.
pub async fn main<H, F>(lesson: Lesson, build: F) -> ExitCode
where
    H: Hooks,
    F: FnOnce(Setup) -> anyhow::Result<Agent<H>>,
{
    let args = LessonArgs::parse();
    run(lesson, args.common, build).await
}

/// Runs a lesson with already parsed flags.
pub async fn run<H, F>(lesson: Lesson, args: CommonArgs, build: F) -> ExitCode
where
    H: Hooks,
    F: FnOnce(Setup) -> anyhow::Result<Agent<H>>,
{
    // Before anything reads a variable, so that `.env` counts for all of
    // them, `RUST_LOG` included.
    load_dotenv();
    init_tracing(args.verbose);
    match start(lesson, &args, build).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn start<H, F>(lesson: Lesson, args: &CommonArgs, build: F) -> anyhow::Result<ExitCode>
where
    H: Hooks,
    F: FnOnce(Setup) -> anyhow::Result<Agent<H>>,
{
    let mut agent = build(Setup::from_args(lesson, args)?)?;

    let mut history = Vec::new();
    let mut printer = TerminalPrinter::new();
    let code = match &args.prompt {
        Some(prompt) => one_shot(&mut agent, &mut history, &mut printer, prompt).await,
        None => {
            repl::run(lesson, &mut agent, &mut history, &mut printer).await;
            ExitCode::SUCCESS
        }
    };
    // Whatever is still running (a background command, say) is reported
    // and stopped, not left behind.
    agent.finish(&mut printer).await;
    printer.close();
    Ok(code)
}

/// Loads `.env` from the current directory into the environment, the first
/// time it is called; later calls do nothing. [`run`] calls it before it
/// reads any variable. A `main` that must see `.env` before that (lessons
/// 19 to 21 weigh `MODEL_ID` against their settings file) calls it first,
/// and the file is still read once.
///
/// `.env` is read from the current directory only, not from its parents: a
/// file somewhere above (in a home or temp directory) must not change which
/// model a lesson talks to without the user knowing. A variable already set
/// is never overridden. A missing `.env` is normal; a malformed one is
/// worth a warning.
pub fn load_dotenv() {
    static LOADED: Once = Once::new();
    LOADED.call_once(|| {
        if let Err(error) = dotenvy::from_path(".env")
            && !error.not_found()
        {
            eprintln!("warning: could not load .env: {error}");
        }
    });
}

/// The lesson's answer to a `/` command, if the line is one the lesson
/// knows ([`Hooks::slash_command`]).
fn slash_command<H: Hooks>(agent: &mut Agent<H>, line: &str) -> Option<String> {
    let line = line.trim();
    if line.starts_with('/') {
        agent.hooks_mut().slash_command(line)
    } else {
        None
    }
}

/// `-p` mode: one turn (or a slash command's answer), then exit with its
/// status. Work the turn or the command started that the harness says is
/// still coming ([`Hooks::has_pending_work`]: lesson 20's workflow runs,
/// lesson 21's goal) is part of the request: it is waited for and handed to the model as the REPL would, and
/// Ctrl-C stops the wait. While it waits, the work's progress is shown
/// (live lines on a terminal). The last line on standard error sums up the
/// input tokens the provider reported.
async fn one_shot<H: Hooks>(
    agent: &mut Agent<H>,
    history: &mut Vec<Message>,
    printer: &mut TerminalPrinter,
    prompt: &str,
) -> ExitCode {
    let mut usage = Usage::default();
    // A slash command is answered by the harness, not the model; work it
    // queued (lesson 21's `/goal` queues the first prompt toward its goal)
    // is taken below like any other pending work.
    let mut next = match slash_command(agent, prompt) {
        Some(answer) => {
            printer.answer(&answer);
            None
        }
        None => Some(prompt.to_string()),
    };
    loop {
        if let Some(prompt) = next.take() {
            match run_turn_printing(agent, history, printer, &prompt, None).await {
                Ok(outcome) => usage.add(&outcome.usage),
                Err(error) => {
                    printer.say(&format!("error: {error}"));
                    return ExitCode::FAILURE;
                }
            }
        }
        if !agent.hooks_mut().has_pending_work() {
            break;
        }
        let interrupted = tokio::select! {
            work = agent.idle_work(printer) => {
                next = Some(work);
                false
            }
            _ = tokio::signal::ctrl_c() => true,
        };
        if interrupted {
            printer.say("\n^C no longer waiting for background work");
            break;
        }
    }
    if let Some(line) = usage_line(&usage) {
        printer.say(&line);
    }
    ExitCode::SUCCESS
}

/// Runs one turn, printing as it goes; Ctrl-C cancels the turn. With
/// `user`, the user's prompt is open during the turn (it was started by
/// arriving work): lines typed meanwhile are kept for later, and Ctrl-C at
/// the prompt cancels the turn too.
async fn run_turn_printing<H: Hooks>(
    agent: &mut Agent<H>,
    history: &mut Vec<Message>,
    printer: &mut TerminalPrinter,
    prompt: &str,
    mut user: Option<&mut repl::TypeAhead>,
) -> Result<TurnOutcome, TurnError> {
    let cancel = CancellationToken::new();
    let outcome = {
        let turn = agent.run_turn(history, prompt, printer, &cancel);
        tokio::pin!(turn);
        loop {
            let listening = user
                .as_ref()
                .is_some_and(|user| user.reader.is_pending() && !user.ended);
            tokio::select! {
                outcome = &mut turn => break outcome,
                signal = tokio::signal::ctrl_c(), if !cancel.is_cancelled() => {
                    if signal.is_ok() {
                        cancelling_note();
                        cancel.cancel();
                    }
                }
                read = next_read(user.as_deref_mut()), if listening => {
                    if let Some(user) = user.as_deref_mut()
                        && user.take(read)
                        && !cancel.is_cancelled()
                    {
                        cancelling_note();
                        cancel.cancel();
                    }
                }
            }
        }
    };
    printer.end_turn();
    if let Ok(outcome) = &outcome
        && let Some(note) = stop_note(outcome)
    {
        printer.say(&note);
    }
    outcome
}

/// Says at once that the turn is being cancelled (a running tool may take a
/// moment to stop). The turn has the printer, so the note is written past
/// it, above the live lines ([`live::suspended`]).
fn cancelling_note() {
    live::suspended(|| eprintln!("\n^C cancelling the turn…"));
}

/// The pending read's line, or never when there is no reader.
async fn next_read(user: Option<&mut repl::TypeAhead>) -> input::Read {
    match user {
        Some(user) => user.reader.next().await,
        None => std::future::pending().await,
    }
}

// ANCHOR: usage_line
/// One line for the input tokens a turn's model calls used, split as the
/// provider reported them: read from its prompt cache, written to it, and
/// neither. `None` when the provider reported nothing (the demo model).
pub fn usage_line(usage: &Usage) -> Option<String> {
    let read = usage.cache_read_input_tokens;
    let written = usage.cache_creation_input_tokens;
    let total = usage.input_tokens + read.unwrap_or(0) + written.unwrap_or(0);
    if total == 0 && usage.output_tokens == 0 {
        return None;
    }
    let cache = if read.is_some() || written.is_some() {
        format!(
            " ({} read from cache, {} written to it, {} uncached)",
            thousands(read.unwrap_or(0)),
            thousands(written.unwrap_or(0)),
            thousands(usage.input_tokens)
        )
    } else {
        String::new()
    };
    Some(format!(
        "usage: {} input tokens{cache}, {} output tokens",
        thousands(total),
        thousands(usage.output_tokens)
    ))
}
// ANCHOR_END: usage_line

/// `12345` as `12,345`.
fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// One line for a turn that ended for a reason the user should hear about:
/// otherwise a refusal, say, would look like an empty reply.
pub(crate) fn stop_note(outcome: &TurnOutcome) -> Option<String> {
    match outcome.stop_reason.as_ref()? {
        StopReason::EndTurn | StopReason::ToolUse | StopReason::StopSequence => None,
        StopReason::MaxTokens => Some("(the reply was cut off at max_tokens)".to_string()),
        StopReason::Refusal => {
            Some("(the model declined to answer this request: stop reason `refusal`)".to_string())
        }
        StopReason::PauseTurn => Some(
            "(the model paused its turn: stop reason `pause_turn`; send another prompt to \
             let it go on)"
                .to_string(),
        ),
        StopReason::Other(reason) => Some(format!(
            "(the model stopped for a reason this harness does not act on: `{reason}`)"
        )),
    }
}

/// A new, empty directory for a demo run, under the system's temp
/// directory. It is left in place, so the user can look at what the demo
/// made.
fn scratch_dir(lesson: Lesson) -> anyhow::Result<std::path::PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or_default();
    let dir =
        std::env::temp_dir().join(format!("{}-demo-{stamp}-{}", lesson.id, std::process::id()));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the scratch directory {}", dir.display()))?;
    Ok(dir)
}

fn init_tracing(verbose: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = if verbose {
        EnvFilter::new("debug,hyper=info,hyper_util=info,reqwest=info,rustls=info")
    } else {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"))
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(stop_reason: Option<StopReason>) -> TurnOutcome {
        TurnOutcome {
            final_text: String::new(),
            rounds: 1,
            truncated: stop_reason == Some(StopReason::MaxTokens),
            stop_reason,
            usage: Default::default(),
        }
    }

    #[test]
    fn the_usage_line_splits_the_input_as_the_provider_reported_it() {
        let usage = Usage {
            input_tokens: 345,
            output_tokens: 1_200,
            cache_creation_input_tokens: Some(2_000),
            cache_read_input_tokens: Some(10_000),
        };
        assert_eq!(
            usage_line(&usage).unwrap(),
            "usage: 12,345 input tokens (10,000 read from cache, 2,000 written to it, \
             345 uncached), 1,200 output tokens"
        );
        // A provider that reports no cache figures: no split.
        let plain = Usage {
            input_tokens: 1_000_000,
            output_tokens: 7,
            ..Usage::default()
        };
        assert_eq!(
            usage_line(&plain).unwrap(),
            "usage: 1,000,000 input tokens, 7 output tokens"
        );
        assert_eq!(usage_line(&Usage::default()), None);
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
    }

    #[test]
    fn a_refusal_or_an_unknown_stop_is_one_clear_line() {
        assert_eq!(stop_note(&outcome(Some(StopReason::EndTurn))), None);
        assert_eq!(stop_note(&outcome(None)), None);
        let refusal = stop_note(&outcome(Some(StopReason::Refusal))).unwrap();
        assert!(refusal.contains("declined"), "{refusal}");
        let other = stop_note(&outcome(Some(StopReason::Other(
            "model_context_window_exceeded".into(),
        ))))
        .unwrap();
        assert!(other.contains("model_context_window_exceeded"), "{other}");
        assert!(!other.contains('\n'));
    }
}
