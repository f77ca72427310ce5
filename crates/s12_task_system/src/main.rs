use std::process::ExitCode;

use clap::Parser;
use s12_task_system::compact::CompactConfig;
use s12_task_system::permission::ApproveAll;
use s12_task_system::recovery::RecoveryPolicy;
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
    skills: s12_task_system::SkillsArgs,
}
// ANCHOR_END: args

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut options = s12_task_system::Options::default();
    if args.yes {
        options.approver = Box::new(ApproveAll);
    }
    // The closure runs after `.env` is loaded, so the settings may come from
    // it; this is the only place that reads them.
    shared::cli::run(s12_task_system::LESSON, args.common, move |setup| {
        options.skills = args.skills.or_lookup(shared::settings::from_env);
        options.compact = CompactConfig::from_lookup(shared::settings::from_env)?;
        options.recovery = RecoveryPolicy::from_lookup(shared::settings::from_env)?;
        s12_task_system::build(setup, options)
    })
    .await
}
