use std::process::ExitCode;

use clap::Parser;
use s11_error_recovery::permission::{ApproveAll, Approver, TerminalApprover};
use shared::cli::CommonArgs;

// ANCHOR: args
/// The lesson's command line: the common flags, `--yes` and `--skills-dir`.
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

    #[command(flatten)]
    skills: s11_error_recovery::SkillsArgs,
}
// ANCHOR_END: args

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let approver: Box<dyn Approver> = if args.yes {
        Box::new(ApproveAll)
    } else {
        Box::new(TerminalApprover)
    };
    let skills = args.skills;
    // The closure runs after `.env` is loaded, so SKILLS_DIR may come from it.
    shared::cli::run(s11_error_recovery::LESSON, args.common, move |setup| {
        s11_error_recovery::build_with_skills(setup, approver, &skills.or_env())
    })
    .await
}
