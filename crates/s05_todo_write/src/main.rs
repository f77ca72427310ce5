use std::process::ExitCode;

use clap::Parser;
use s05_todo_write::permission::ApproveAll;
use shared::cli::CommonArgs;

// ANCHOR: args
/// The lesson's command line: the common flags plus `--yes`.
#[derive(Debug, Parser)]
#[command(
    about = "A lesson of the Rust agent course. Type a request; q, exit or an empty line quits."
)]
struct Args {
    #[command(flatten)]
    common: CommonArgs,

    /// Approve in advance every call that would ask `Allow? [y/N]`, for
    /// scripted runs. The deny list still applies.
    #[arg(long, visible_alias = "approve-all")]
    yes: bool,
}
// ANCHOR_END: args

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut options = s05_todo_write::Options::default();
    if args.yes {
        options.approver = Box::new(ApproveAll);
    }
    shared::cli::run(s05_todo_write::LESSON, args.common, |setup| {
        s05_todo_write::build(setup, options)
    })
    .await
}
