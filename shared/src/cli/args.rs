//! The command-line flags every lesson accepts.

use std::path::PathBuf;

use crate::model::config::{ModelChoice, ProviderKind};

/// Flags common to all lessons. A lesson with flags of its own embeds this
/// struct with `#[command(flatten)]`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommonArgs {
    /// Model id to request (default: $MODEL_ID, else a current Claude model).
    #[arg(long)]
    pub model: Option<String>,

    /// Provider: anthropic, openai (any compatible server) or demo.
    /// Default: anthropic if ANTHROPIC_API_KEY is set, openai if only
    /// OPENAI_BASE_URL is set, else demo.
    #[arg(long)]
    pub provider: Option<ProviderKind>,

    /// Use the offline demo model, even if a real one is configured.
    #[arg(long)]
    pub demo: bool,

    /// The workspace the agent works in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// Run this one prompt without a REPL, then exit (0 if the turn completed).
    #[arg(short = 'p', long = "prompt", value_name = "TEXT")]
    pub prompt: Option<String>,

    /// Log what the harness does (tracing at debug level; RUST_LOG works too).
    #[arg(short, long)]
    pub verbose: bool,
}

impl CommonArgs {
    /// The model the user asked for.
    pub fn model_choice(&self) -> ModelChoice {
        ModelChoice {
            provider: self.provider,
            model_id: self.model.clone(),
            demo: self.demo,
        }
    }
}

/// The whole command line of a lesson that adds no flags.
#[derive(Debug, clap::Parser)]
#[command(
    about = "A lesson of the Rust agent course. Type a request; q, exit or an empty line quits."
)]
pub struct LessonArgs {
    /// The flags every lesson has.
    #[command(flatten)]
    pub common: CommonArgs,
}
