use std::process::ExitCode;

use clap::Parser;
use s10_system_prompt::compact::CompactConfig;
use s10_system_prompt::permission::ApproveAll;
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
    skills: s10_system_prompt::SkillsArgs,
}
// ANCHOR_END: args

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut options = s10_system_prompt::Options::default();
    if args.yes {
        options.approver = Box::new(ApproveAll);
    }
    // The closure runs after `.env` is loaded, so SKILLS_DIR may come from it.
    shared::cli::run(s10_system_prompt::LESSON, args.common, move |setup| {
        options.skills = args.skills.or_lookup(shared::settings::from_env);
        options.compact = CompactConfig::from_lookup(shared::settings::from_env)?;
        s10_system_prompt::build(setup, options)
    })
    .await
}
