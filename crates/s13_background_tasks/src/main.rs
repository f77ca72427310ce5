use std::process::ExitCode;

use clap::Parser;
use s13_background_tasks::compact::CompactConfig;
use s13_background_tasks::permission::ApproveAll;
use s13_background_tasks::recovery::RecoveryPolicy;
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
    skills: s13_background_tasks::SkillsArgs,
}
// ANCHOR_END: args

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut options = s13_background_tasks::Options::default();
    if args.yes {
        options.approver = Box::new(ApproveAll);
    }
    // The closure runs after `.env` is loaded, so the settings may come from
    // it; this is the only place that reads them.
    shared::cli::run(s13_background_tasks::LESSON, args.common, move |setup| {
        options.skills = args.skills.or_lookup(shared::settings::from_env);
        options.compact = CompactConfig::from_lookup(shared::settings::from_env)?;
        options.recovery = RecoveryPolicy::from_lookup(shared::settings::from_env)?;
        s13_background_tasks::build(setup, options)
    })
    .await
}
