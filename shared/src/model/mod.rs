//! Model providers behind one trait.
//!
//! The loop only knows [`Model`]: send a [`Request`], get a [`Response`],
//! report [`Delta`]s while it streams. Three providers implement it:
//!
//! * [`anthropic::AnthropicClient`]: the Messages API (the default);
//! * [`openai::OpenAiClient`]: any OpenAI-compatible Chat Completions server
//!   (Ollama, vLLM, llama.cpp, LM Studio, DeepSeek, OpenRouter);
//! * [`scripted::ScriptedModel`]: an offline model that plays a script — the
//!   demo model when no key is configured, and the fake model in tests.
//!
//! [`config`] picks one from the command line and the environment.

pub mod anthropic;
pub mod config;
pub mod openai;
pub mod scripted;
mod sse;
pub mod transport;

use std::future::Future;
use std::pin::Pin;

use crate::error::ApiError;
use crate::protocol::{Delta, Request, Response};

/// A boxed future, so that `dyn Model` works.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Receives the reply as it streams in.
pub type DeltaSink<'a> = dyn FnMut(Delta<'_>) + Send + 'a;

/// Something that answers requests in the Messages API's shape.
pub trait Model: Send + Sync {
    /// A short name for notices and logs (`"anthropic"`, `"demo"`, …).
    fn provider(&self) -> &str;

    /// Sends one request. Streaming pieces go to `on_delta` as they arrive;
    /// the complete reply is returned once the stream has ended cleanly.
    /// A reply that did not end cleanly is an error, never a partial
    /// [`Response`].
    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>>;
}
