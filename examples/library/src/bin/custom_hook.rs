//! # Attach hooks of your own
//!
//! Lesson 4 put a [`HookRegistry`](lesson::hook_registry::HookRegistry)
//! around every tool call: `PreToolUse` callbacks run before a tool and may
//! refuse it (the reason goes back to the model as the call's `is_error`
//! result, so the loop goes on), `PostToolUse` callbacks see each call and
//! what it returned. The lesson registers its own there (the permission
//! check, the log of calls); `agent.hooks_mut().registry()` lets a program add
//! more. They run after the lesson's, in the order they were added.
//!
//! Two hooks here: a policy that refuses any `bash` command that deletes
//! with `rm`, and an audit log that appends one line per finished call to
//! `audit.log` in the workspace. The scripted model (used when none is
//! configured) writes `draft.txt`, tries to `rm` it, and answers: the
//! draft survives, and the log holds the call that ran.
//!
//! ```sh
//! cargo run -p course_examples --bin custom_hook -- --workdir /tmp/play
//! cat /tmp/play/audit.log
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use shared::CancellationToken;
use shared::agent::{Event, Observer};
use shared::cli::CommonArgs;
use shared::protocol::ToolUse;
use shared::tools::ToolOutput;

/// The audit log, in the workspace.
const AUDIT_LOG: &str = "audit.log";

// ANCHOR: hooks
/// `PreToolUse`: refuses `bash` commands that run `rm`; says nothing about
/// anything else (`None` lets the call through to the next hook).
fn no_rm(call: &ToolUse) -> Option<String> {
    let command = call.input.get("command").and_then(|c| c.as_str())?;
    let deletes = command
        .split(|c: char| c.is_whitespace() || ";&|()".contains(c))
        .any(|word| word == "rm");
    (call.name == "bash" && deletes).then(|| {
        "Refused by the project's policy hook: this project never deletes files with rm. \
         Leave the file, or say which one should go."
            .to_string()
    })
}

/// `PostToolUse`: appends `name ok|error input` to the log. A hook cannot
/// fail the call it watches, so a log that cannot be written is skipped.
fn audit(log: PathBuf) -> impl Fn(&ToolUse, &ToolOutput) + Send + Sync {
    move |call, output| {
        let status = if output.is_error { "error" } else { "ok" };
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
        {
            let _ = writeln!(file, "{} {status} {}", call.name, call.input);
        }
    }
}
// ANCHOR_END: hooks

const PROMPT: &str = "write a draft, then clean it up";

const SCRIPT: &str = r#"{
  "replies": [
    {
      "text": "I'll write the draft.",
      "tool_calls": [{ "name": "bash", "input": { "command": "echo 'first draft' > draft.txt" } }]
    },
    {
      "text": "Now I'll clean up.",
      "tool_calls": [{ "name": "bash", "input": { "command": "rm draft.txt" } }]
    },
    { "text": "The policy refused the rm, so draft.txt stays." }
  ]
}"#;

#[derive(Parser)]
#[command(about = "A lesson's agent with two hooks of our own: a policy and an audit log.")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
}

/// Prints every call and its result, one line each.
struct Calls;

impl Observer for Calls {
    fn event(&mut self, event: Event<'_>) {
        if let Event::ToolResult(call, result) = event {
            let status = if result.is_error { "error" } else { "ok" };
            println!(
                "{} {} -> {status}: {}",
                call.name,
                call.input,
                result.content.text().trim_end()
            );
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
    let setup = course_examples::setup("custom_hook", &args.common, SCRIPT)?;
    let log = setup.workspace().root().join(AUDIT_LOG);
    // Approve everything the lesson's permission check would ask about
    // (it shows each question it answered, as `--yes` does): there is no
    // terminal to ask, and our own policy hook runs after it.
    let options = lesson::Options {
        approver: Box::new(lesson::permission::ApproveAll),
        ..lesson::Options::default()
    };
    let mut agent = lesson::build(setup, options)?;
    // ANCHOR: register
    {
        let mut registry = agent.hooks_mut().registry();
        registry.on_pre_tool_use(no_rm);
        registry.on_post_tool_use(audit(log));
    }
    // ANCHOR_END: register

    let prompt = args.common.prompt.as_deref().unwrap_or(PROMPT);
    let mut history = Vec::new();
    let outcome = agent
        .run_turn(&mut history, prompt, &mut Calls, &CancellationToken::new())
        .await;
    agent.finish(&mut Calls).await;
    match outcome {
        Ok(outcome) => {
            println!("{}", outcome.final_text);
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("the turn failed: {error}");
            Ok(ExitCode::FAILURE)
        }
    }
}
