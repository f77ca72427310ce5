use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime};
use s21_goal_loop::Settings;
use s21_goal_loop::cron::StartedClock;
use s21_goal_loop::goal::EvaluatorChoice;
use s21_goal_loop::permission::ApproveAll;
use s21_goal_loop::settings::layers::ENV_MODEL_ID;
use shared::cli::CommonArgs;
use shared::settings::from_env;

// ANCHOR: args
/// The lesson's command line: the common flags, `--yes`, `--skills-dir`,
/// `--pretend-now`, `--settings` and `--team`.
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
    skills: s21_goal_loop::SkillsArgs,

    /// Start the cron scheduler's clock at this time and let it run from
    /// there, to try a schedule without waiting for the real date:
    /// `2026-03-08T01:58:00-05:00[America/New_York]`, or an RFC 3339 time
    /// such as `2026-12-01T08:59:55Z` (read in the local time zone).
    #[arg(long, value_name = "TIME", value_parser = parse_start)]
    pretend_now: Option<ZonedDateTime>,

    /// The settings file (TOML) that configures the harness (default:
    /// WORKSPACE/.agent/settings.toml, if there is one; without a file,
    /// every setting has its default).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,

    /// The team's name: its mailboxes are `.mailboxes/<NAME>/`, apart from
    /// another team's in the same workspace. Give the same name after a
    /// restart to read the mail your team sent meanwhile.
    #[arg(long, value_name = "NAME", default_value = s21_goal_loop::team::DEFAULT_TEAM)]
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

// ANCHOR: main
#[tokio::main]
async fn main() -> ExitCode {
    let mut args = Args::parse();
    // `.env` now, so that a MODEL_ID there counts as the environment when
    // the settings are weighed below. The front end would load it later;
    // it is loaded once, so the front end's call then does nothing.
    shared::cli::load_dotenv();
    // The settings file is read once, here, before anything starts; a bad
    // one is refused with its file, key and reason.
    let workspace = args
        .common
        .workdir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let settings = match Settings::find(args.settings.as_deref(), &workspace) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    // Every value: the flag, else the environment, else the settings file,
    // else the default.
    args.common.model = args
        .common
        .model
        .take()
        .or_else(|| settings.under(from_env)(ENV_MODEL_ID));
    args.common.provider = args.common.provider.or(settings.model.provider);
    let mut options = s21_goal_loop::Options {
        team: args.team.clone(),
        ..s21_goal_loop::Options::default()
    };
    if args.yes {
        options.approver = Box::new(ApproveAll);
    }
    if let Some(start) = args.pretend_now {
        options.clock = Arc::new(StartedClock::new(start));
    }
    // The closure runs after `.env` is loaded, so the settings may come from
    // it; this is the only place that reads them.
    shared::cli::run(s21_goal_loop::LESSON, args.common, move |setup| {
        options.skills = settings.skills(&args.skills, from_env);
        options.compact = settings.compact_config(from_env)?;
        options.recovery = settings.recovery_policy(from_env)?;
        options.autonomy = settings.autonomy();
        options.mcp = settings.mcp_options(from_env)?;
        options.workflows = settings.workflow_options(options.workflows, from_env)?;
        options.goal = settings.goal_options(options.goal, from_env)?;
        options.settings = settings;
        options.goal.evaluator = goal_evaluator(setup.model().provider(), from_env)?;
        s21_goal_loop::build(setup, options)
    })
    .await
}
// ANCHOR_END: main

// ANCHOR: goal_evaluator
/// The variable that chooses the goal's judge: `keyword` or `model`.
const ENV_GOAL_EVALUATOR: &str = "GOAL_EVALUATOR";

/// Who judges goals: the variable if it is set, else the keyword matcher
/// for the demo model (whose side queries have no opinion to give) and
/// the model for a real one.
fn goal_evaluator(
    provider: &str,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<EvaluatorChoice> {
    match env(ENV_GOAL_EVALUATOR).as_deref().map(str::trim) {
        Some("keyword") => Ok(EvaluatorChoice::Keyword),
        Some("model") => Ok(EvaluatorChoice::Model),
        Some(other) => {
            anyhow::bail!("{ENV_GOAL_EVALUATOR} must be `keyword` or `model`, not {other:?}")
        }
        None if provider == "demo" => Ok(EvaluatorChoice::Keyword),
        None => Ok(EvaluatorChoice::Model),
    }
}
// ANCHOR_END: goal_evaluator
