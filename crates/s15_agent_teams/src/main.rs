use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime};
use s15_agent_teams::compact::CompactConfig;
use s15_agent_teams::cron::StartedClock;
use s15_agent_teams::permission::ApproveAll;
use s15_agent_teams::recovery::RecoveryPolicy;
use shared::cli::CommonArgs;

// ANCHOR: args
/// The lesson's command line: the common flags, `--yes`, `--skills-dir`,
/// `--pretend-now` and `--team`.
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
    skills: s15_agent_teams::SkillsArgs,

    /// Start the cron scheduler's clock at this time and let it run from
    /// there, to try a schedule without waiting for the real date:
    /// `2026-03-08T01:58:00-05:00[America/New_York]`, or an RFC 3339 time
    /// such as `2026-12-01T08:59:55Z` (read in the local time zone).
    #[arg(long, value_name = "TIME", value_parser = parse_start)]
    pretend_now: Option<ZonedDateTime>,

    /// The team's name: its mailboxes are `.mailboxes/<NAME>/`, apart from
    /// another team's in the same workspace. Give the same name after a
    /// restart to read the mail your team sent meanwhile.
    #[arg(long, value_name = "NAME", default_value = s15_agent_teams::team::DEFAULT_TEAM)]
    team: String,
}

/// `--pretend-now`: a time with its zone, or an instant shown in the
/// system's zone.
fn parse_start(text: &str) -> anyhow::Result<ZonedDateTime> {
    text.parse::<ZonedDateTime>().or_else(|zoned_error| {
        text.parse::<Timestamp>()
            .map(|instant| instant.to_zoned_datetime(TimeZone::system()))
            .map_err(|_| {
                anyhow::anyhow!("not a time with a zone or an RFC 3339 time: {zoned_error}")
            })
    })
}
// ANCHOR_END: args

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut options = s15_agent_teams::Options {
        team: args.team,
        ..s15_agent_teams::Options::default()
    };
    if args.yes {
        options.approver = Box::new(ApproveAll);
    }
    if let Some(start) = args.pretend_now {
        options.clock = Arc::new(StartedClock::new(start));
    }
    // The closure runs after `.env` is loaded, so the settings may come from
    // it; this is the only place that reads them.
    shared::cli::run(s15_agent_teams::LESSON, args.common, move |setup| {
        options.skills = args.skills.or_lookup(shared::settings::from_env);
        options.compact = CompactConfig::from_lookup(shared::settings::from_env)?;
        options.recovery = RecoveryPolicy::from_lookup(shared::settings::from_env)?;
        s15_agent_teams::build(setup, options)
    })
    .await
}
