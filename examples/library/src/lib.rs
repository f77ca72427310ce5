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
//! would pick, chosen by the same code.

use shared::cli::{CommonArgs, Lesson, Setup};
use shared::model::scripted::demo_model;

/// The model and the workspace, chosen by [`Setup::from_args`] exactly as
/// a lesson's binary chooses them from the same flags (`--demo`,
/// `--provider`, `--model`, `--workdir`) and the same environment and
/// `.env`: the model configured there, else the scripted model playing
/// `script` (a script in the format of a lesson's `demo.json`); the
/// workspace `--workdir`, else a scratch directory for the scripted model,
/// else the current directory. `program` names the scratch directory.
pub fn setup(
    program: &'static str,
    args: &CommonArgs,
    script: &'static str,
) -> anyhow::Result<Setup> {
    let program = Lesson {
        id: program,
        title: program,
        demo_script: script,
        demo_model,
    };
    Setup::from_args(program, args)
}
