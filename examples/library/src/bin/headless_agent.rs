//! # Drive an agent from code
//!
//! A lesson's binary hands its agent to the terminal front end, which reads
//! prompts, streams the replies and prints the tool calls. Nothing in the
//! agent needs that front end: `lesson::build` returns an
//! [`Agent`](shared::agent::Agent), and one call, `run_turn`, runs a prompt
//! through the loop to the end of the model's turn. What you get back is
//! data: a [`TurnOutcome`](shared::agent::TurnOutcome) (the last reply's
//! text, how many model calls it took, the tokens used) and the history,
//! every message of the turn, which [`shared::history::validate`] checks
//! against the pairing rules. That is how you put an agent in a script, a
//! CI job or a test.
//!
//! With no model configured, a short script plays the model: it writes
//! `notes.md`, counts its lines with `bash`, and answers. Both tools really
//! run in the workspace.
//!
//! ```sh
//! cargo run -p course_examples --bin headless_agent -- --workdir /tmp/play
//! ANTHROPIC_API_KEY=… cargo run -p course_examples --bin headless_agent -- \
//!     --workdir /tmp/play -p "list the files here and say which is largest"
//! ```

use std::process::ExitCode;

use clap::Parser;
use shared::CancellationToken;
use shared::agent::{Event, Observer};
use shared::cli::CommonArgs;
use shared::history::validate;

/// The prompt when `-p` gives none (the script below was written for it).
const PROMPT: &str = "start a notes file and tell me how long it is";

/// What the scripted model does, in the format of a lesson's `demo.json`.
const SCRIPT: &str = r##"{
  "replies": [
    {
      "text": "I'll start the notes file.",
      "tool_calls": [
        { "name": "write_file",
          "input": { "path": "notes.md", "content": "# Notes\n\n- written by an agent driven from code\n" } }
      ]
    },
    {
      "text": "Now I'll count its lines.",
      "tool_calls": [{ "name": "bash", "input": { "command": "wc -l < notes.md" } }]
    },
    { "text": "notes.md is started; wc counted its lines above." }
  ]
}"##;

#[derive(Parser)]
#[command(about = "Run one prompt through a lesson's agent, without the terminal front end.")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
}

/// An observer of our own: the front end is just one of them. This one
/// keeps each tool call's name and whether it failed.
#[derive(Default)]
struct ToolLog {
    calls: Vec<String>,
    failures: usize,
}

impl Observer for ToolLog {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::ToolCall(call) => self.calls.push(call.name.clone()),
            Event::ToolResult(_, result) if result.is_error => self.failures += 1,
            _ => {}
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let setup = course_examples::setup("headless_agent", &args.common, SCRIPT)?;
    // The fields left at their defaults build the lesson as its binary does;
    // the approver is the one thing a program without a terminal must
    // choose, since nobody is there to answer `Allow? [y/N]`.
    let options = lesson::Options {
        approver: Box::new(lesson::permission::ApproveAll),
        ..lesson::Options::default()
    };
    let mut agent = lesson::build(setup, options)?;

    let prompt = args.common.prompt.as_deref().unwrap_or(PROMPT);
    let mut history = Vec::new();
    let mut log = ToolLog::default();
    let outcome = agent
        .run_turn(&mut history, prompt, &mut log, &CancellationToken::new())
        .await;
    // Lets the lesson's mechanisms finish their work (lesson 13 stops
    // background commands still running).
    agent.finish(&mut log).await;

    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            eprintln!("the turn failed: {error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    validate(&history).map_err(anyhow::Error::msg)?;
    println!("{}", outcome.final_text);
    println!(
        "rounds: {}, tool calls: {} ({}), failed: {}, messages in the history: {}",
        outcome.rounds,
        log.calls.len(),
        log.calls.join(", "),
        log.failures,
        history.len()
    );
    Ok(ExitCode::SUCCESS)
}
