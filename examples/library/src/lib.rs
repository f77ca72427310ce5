//! # Using a lesson as a library
//!
//! Every lesson crate is a library with a thin binary on top, so a program
//! of your own can build the lesson's agent and do with it what its `main`
//! does not: run a turn from code and look at the result, put one more
//! tool in its dispatch map, hang one more callback in its hook registry.
//! These are the three things to try first after forking a stage
//! (`cargo xtask fork`), one program each:
//!
//! - `src/bin/headless_agent.rs`: build the agent with `Options`, run one
//!   turn without the terminal front end, and inspect the outcome and the
//!   history it left;
//! - `src/bin/custom_tool.rs`: register a tool of your own, `word_count`,
//!   next to the lesson's, with the same `ToolContext` theirs get;
//! - `src/bin/custom_hook.rs`: a `PreToolUse` hook that refuses a command
//!   and a `PostToolUse` hook that writes an audit log.
//!
//! The lesson is the dependency called `lesson` in `Cargo.toml` (the
//! newest lesson of the course). This library holds the one thing all
//! three share, [`setup`]: the model and workspace a lesson's binary
//! would pick.

use anyhow::Context;
use shared::cli::{CommonArgs, Setup};
use shared::model::config::select_model;
use shared::model::scripted::demo_model;
use shared::tools::Workspace;

/// The model and the workspace, chosen as a lesson's binary chooses them
/// from the same flags (`--demo`, `--provider`, `--model`, `--workdir`):
/// the model configured in `env` (`ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`,
/// `MODEL_ID`), else the scripted model playing `script`, a script in the
/// format of a lesson's `demo.json`. The workspace is `--workdir`, else the
/// current directory. `env` is the environment, passed in by `main`, which
/// is the only place that reads it.
pub fn setup(
    args: &CommonArgs,
    script: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Setup> {
    let selected =
        select_model(&args.model_choice(), env, script, demo_model).map_err(anyhow::Error::msg)?;
    let root = match &args.workdir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = Workspace::new(&root)
        .with_context(|| format!("cannot open the workspace {}", root.display()))?;
    Ok(Setup::new(workspace, selected.model, selected.model_id))
}
