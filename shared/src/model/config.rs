//! Choosing a model provider from flags and environment variables.
//!
//! The rules, in order:
//!
//! 1. `--demo` always picks the demo model.
//! 2. `--provider anthropic|openai|demo` picks that provider.
//! 3. Otherwise `ANTHROPIC_API_KEY` or `ANTHROPIC_AUTH_TOKEN` picks Anthropic
//!    (or a compatible endpoint at `ANTHROPIC_BASE_URL`).
//! 4. Otherwise `OPENAI_BASE_URL` picks the OpenAI-compatible client
//!    (`OPENAI_API_KEY` is optional: local servers need none).
//! 5. Otherwise the demo model, with a notice saying how to configure a real one.
//!
//! Secrets are held in [`Secret`], whose `Debug` output never shows them.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::Model;
pub use super::anthropic::DEFAULT_ANTHROPIC_BASE_URL;
use super::anthropic::{AnthropicClient, AnthropicConfig};
use super::openai::{OpenAiClient, OpenAiConfig};
use super::scripted::DemoModel;
pub use super::transport::{Secret, Timeouts};
use crate::error::{SelectModelError, UnknownProvider};

/// The model used when neither `--model` nor `MODEL_ID` names one.
pub const DEFAULT_MODEL_ID: &str = "claude-sonnet-4-5";

/// Which kind of model to talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// A server that speaks OpenAI's Chat Completions (Ollama, vLLM, ...).
    OpenAi,
    /// The offline scripted model that replays the lesson's `demo.json`.
    Demo,
}

impl FromStr for ProviderKind {
    type Err = UnknownProvider;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "anthropic" | "claude" => Ok(Self::Anthropic),
            "openai" | "openai-compatible" | "ollama" | "vllm" => Ok(Self::OpenAi),
            "demo" => Ok(Self::Demo),
            other => Err(UnknownProvider(other.to_string())),
        }
    }
}

/// What the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    /// `--provider`, if given.
    pub provider: Option<ProviderKind>,
    /// `--model`, if given.
    pub model_id: Option<String>,
    /// `--demo`: use the demo model even if a real one is configured.
    pub demo: bool,
}

/// The chosen model, ready to use.
pub struct SelectedModel {
    /// The client every model call goes through.
    pub model: Arc<dyn Model>,
    /// The model id sent with each request.
    pub model_id: String,
    /// A line to show the user before the first prompt (the demo notice).
    pub notice: Option<String>,
}

impl fmt::Debug for SelectedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectedModel")
            .field("provider", &self.model.provider())
            .field("model_id", &self.model_id)
            .field("notice", &self.notice)
            .finish()
    }
}

/// The notice printed when the demo model runs because nothing is configured.
pub const DEMO_NOTICE: &str = "[demo model] No model is configured, so this lesson plays its \
scripted demo (real tools, scripted model). Set ANTHROPIC_API_KEY, or OPENAI_BASE_URL for a \
local server, to use a real model.";

/// Picks a provider. `env` looks up a variable (the real environment in the
/// binaries, a map in tests); `demo_script` is the lesson's embedded script
/// and `demo_model` turns it into the demo model.
pub fn select_model(
    choice: &ModelChoice,
    env: &dyn Fn(&str) -> Option<String>,
    demo_script: &str,
    demo_model: DemoModel,
) -> Result<SelectedModel, SelectModelError> {
    let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let has_anthropic = var("ANTHROPIC_API_KEY").is_some() || var("ANTHROPIC_AUTH_TOKEN").is_some();
    let kind = if choice.demo {
        ProviderKind::Demo
    } else if let Some(kind) = choice.provider {
        kind
    } else if has_anthropic {
        ProviderKind::Anthropic
    } else if var("OPENAI_BASE_URL").is_some() {
        ProviderKind::OpenAi
    } else {
        ProviderKind::Demo
    };
    let model_id = choice
        .model_id
        .clone()
        .or_else(|| var("MODEL_ID"))
        .unwrap_or_else(|| DEFAULT_MODEL_ID.to_string());

    match kind {
        ProviderKind::Demo => {
            let model = demo_model(demo_script).map_err(SelectModelError::DemoScript)?;
            let notice = if choice.demo {
                "[demo model] Running the scripted demo (--demo): real tools, scripted model."
                    .to_string()
            } else {
                DEMO_NOTICE.to_string()
            };
            Ok(SelectedModel {
                model,
                model_id: "demo".to_string(),
                notice: Some(notice),
            })
        }
        ProviderKind::Anthropic => {
            let api_key = var("ANTHROPIC_API_KEY").map(Secret::new);
            let auth_token = var("ANTHROPIC_AUTH_TOKEN").map(Secret::new);
            if api_key.is_none() && auth_token.is_none() {
                return Err(SelectModelError::MissingAnthropicCredentials);
            }
            let config = AnthropicConfig {
                base_url: var("ANTHROPIC_BASE_URL")
                    .unwrap_or_else(|| DEFAULT_ANTHROPIC_BASE_URL.to_string()),
                api_key,
                auth_token,
                ..AnthropicConfig::default()
            };
            let client = AnthropicClient::new(config)?;
            Ok(SelectedModel {
                model: Arc::new(client),
                model_id,
                notice: None,
            })
        }
        ProviderKind::OpenAi => {
            let base_url = var("OPENAI_BASE_URL").ok_or(SelectModelError::MissingOpenAiBaseUrl)?;
            let config = OpenAiConfig {
                base_url,
                api_key: var("OPENAI_API_KEY").map(Secret::new),
                ..OpenAiConfig::default()
            };
            let client = OpenAiClient::new(config)?;
            Ok(SelectedModel {
                model: Arc::new(client),
                model_id,
                notice: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scripted::demo_model;
    use std::collections::HashMap;

    const SCRIPT: &str = r#"{"replies": [{"text": "hi"}]}"#;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn no_configuration_means_demo_with_notice() {
        let selected =
            select_model(&ModelChoice::default(), &env(&[]), SCRIPT, demo_model).unwrap();
        assert_eq!(selected.model.provider(), "demo");
        assert_eq!(selected.notice.as_deref(), Some(DEMO_NOTICE));
    }

    #[test]
    fn anthropic_key_wins_over_openai_url() {
        let selected = select_model(
            &ModelChoice::default(),
            &env(&[
                ("ANTHROPIC_API_KEY", "sk-ant-secret"),
                ("OPENAI_BASE_URL", "http://x"),
            ]),
            SCRIPT,
            demo_model,
        )
        .unwrap();
        assert_eq!(selected.model.provider(), "anthropic");
        assert_eq!(selected.model_id, DEFAULT_MODEL_ID);
        assert!(!format!("{selected:?}").contains("sk-ant-secret"));
    }

    #[test]
    fn openai_url_alone_selects_openai_and_model_id_is_read() {
        let selected = select_model(
            &ModelChoice::default(),
            &env(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
                ("MODEL_ID", "qwen3"),
            ]),
            SCRIPT,
            demo_model,
        )
        .unwrap();
        assert_eq!(selected.model.provider(), "openai");
        assert_eq!(selected.model_id, "qwen3");
    }

    #[test]
    fn explicit_provider_without_credentials_is_a_clear_error() {
        let choice = ModelChoice {
            provider: Some(ProviderKind::Anthropic),
            ..ModelChoice::default()
        };
        let error = select_model(&choice, &env(&[]), SCRIPT, demo_model).unwrap_err();
        assert!(
            matches!(error, SelectModelError::MissingAnthropicCredentials),
            "{error}"
        );
        assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");
    }

    #[test]
    fn secrets_do_not_debug_print() {
        assert_eq!(format!("{:?}", Secret::new("sk-ant-123")), "Secret(***)");
    }
}
