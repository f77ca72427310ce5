//! An OpenAI-compatible Chat Completions client, streaming.
//!
//! (Being written: see the foundation issue.)

use super::config::{Secret, Timeouts};
use super::{BoxFuture, DeltaSink, Model};
use crate::error::ApiError;
use crate::protocol::{Request, Response};

/// How to reach the server.
#[derive(Debug, Clone, Default)]
pub struct OpenAiConfig {
    /// For example `http://localhost:11434/v1`; `/chat/completions` is appended.
    pub base_url: String,
    /// Sent as a bearer token when set; local servers need none.
    pub api_key: Option<Secret>,
    pub timeouts: Timeouts,
}

/// A client for `POST {base}/chat/completions`.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    #[allow(dead_code)]
    config: OpenAiConfig,
}

impl OpenAiClient {
    /// Builds the client.
    pub fn new(config: OpenAiConfig) -> Result<Self, ApiError> {
        Ok(Self { config })
    }
}

impl Model for OpenAiClient {
    fn provider(&self) -> &str {
        "openai"
    }

    fn send<'a>(
        &'a self,
        _request: &'a Request<'a>,
        _on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(async {
            Err(ApiError::Protocol {
                message: "not implemented yet".into(),
            })
        })
    }
}
