//! # Add a tool of your own
//!
//! A lesson's tools live in one dispatch map, the
//! [`ToolRegistry`](lesson::dispatch::ToolRegistry) its hooks own. The
//! agent that `lesson::build` returns lends that map out
//! (`agent.hooks_mut().tool_registry()`), and a tool registered there is a tool
//! like any other: the model is offered it on its next call, the loop
//! dispatches to it by name, the permission check and the hooks run around
//! it, and its handler gets the same [`ToolContext`] as the built-in tools:
//! the workspace, the notice queue, the turn's cancellation.
//!
//! The tool here is `word_count`: lines, words and bytes of a file. It
//! resolves the path through the workspace, so a path outside it is refused
//! as the built-in file tools refuse it, and bad input is an `is_error`
//! result that tells the model what was wrong, never a panic. The scripted
//! model (used when none is configured) counts `poem.txt`, tries a file
//! outside the workspace, and answers; the program prints each call and its
//! result.
//!
//! ```sh
//! printf 'one two\nthree\n' > /tmp/play/poem.txt
//! cargo run -p course_examples --bin custom_tool -- --workdir /tmp/play
//! ```

use std::process::ExitCode;

use clap::Parser;
use lesson::dispatch::ToolContext;
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Event, Observer};
use shared::cli::CommonArgs;
use shared::protocol::ToolSpec;
use shared::tools::ToolOutput;

// ANCHOR: tool
/// What the model is told about the tool.
fn word_count_spec() -> ToolSpec {
    ToolSpec::new(
        "word_count",
        "Count the lines, words and bytes of a text file in the workspace, as `wc` does.",
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The file, relative to the workspace." }
            },
            "required": ["path"]
        }),
    )
}

/// The handler: raw input in, a result for the model out.
async fn word_count(input: Value, cx: ToolContext) -> ToolOutput {
    let Some(path) = input.get("path").and_then(Value::as_str) else {
        return ToolOutput::error("word_count needs `path`, the file to count, as a string");
    };
    let file = match cx.workspace.resolve(path) {
        Ok(file) => file,
        Err(error) => return ToolOutput::error(error.to_string()),
    };
    match tokio::fs::read_to_string(&file).await {
        Ok(text) => ToolOutput::ok(format!(
            "{path}: {} lines, {} words, {} bytes",
            text.lines().count(),
            text.split_whitespace().count(),
            text.len()
        )),
        Err(error) => ToolOutput::error(format!("cannot read {path}: {error}")),
    }
}
// ANCHOR_END: tool

const PROMPT: &str = "how long is poem.txt?";

const SCRIPT: &str = r#"{
  "replies": [
    {
      "text": "I'll count it with word_count.",
      "tool_calls": [{ "name": "word_count", "input": { "path": "poem.txt" } }]
    },
    {
      "text": "And a file outside the workspace, to see the tool refuse it.",
      "tool_calls": [{ "name": "word_count", "input": { "path": "../outside.txt" } }]
    },
    { "text": "The counts are above; the second file was out of reach, as it should be." }
  ]
}"#;

#[derive(Parser)]
#[command(about = "A lesson's agent with one more tool, word_count, in its dispatch map.")]
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
                result.content.text()
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
    let setup = course_examples::setup("custom_tool", &args.common, SCRIPT)?;
    let options = lesson::Options {
        approver: Box::new(lesson::permission::ApproveAll),
        ..lesson::Options::default()
    };
    let mut agent = lesson::build(setup, options)?;
    // ANCHOR: register
    agent
        .hooks_mut()
        .tool_registry()
        .register(word_count_spec(), word_count);
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
