//! Typed errors from model providers.
//!
//! Lessons act on *kinds* of failure: chapter 8 compacts on
//! [`ApiError::PromptTooLong`], chapter 11 backs off on
//! [`ApiError::RateLimited`] and [`ApiError::Overloaded`]. So the clients
//! classify every failure here once, by HTTP status and the API's
//! `error.type`, and nobody downstream matches on message strings.
//!
//! No variant ever holds a request header, so the API key cannot leak into an
//! error message.
//!
//! Choosing the provider in the first place can fail too, before any
//! request: [`SelectModelError`] says why.

use std::time::Duration;

/// Everything that can go wrong while asking a model for a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// HTTP 429 or `rate_limit_error`. `retry_after` comes from the header.
    #[error("rate limited{}: {message}", retry_hint(.retry_after))]
    RateLimited {
        /// How long the provider asked us to wait, if it said.
        retry_after: Option<Duration>,
        /// The provider's `error.message`, or the start of the body without one.
        message: String,
    },
    /// HTTP 529 or `overloaded_error`: the provider is busy, try again later.
    #[error("the model is overloaded: {message}")]
    Overloaded {
        /// The provider's `error.message`, or the start of the body without one.
        message: String,
    },
    /// The conversation no longer fits in the model's context window.
    #[error("prompt too long: {message}")]
    PromptTooLong {
        /// The provider's `error.message`, or the start of the body without one.
        message: String,
    },
    /// HTTP 400 for any other reason: the request itself is wrong.
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// The provider's `error.message`, or the start of the body without one.
        message: String,
    },
    /// HTTP 401/403: missing, wrong or insufficient credentials.
    #[error("authentication failed: {message}")]
    Authentication {
        /// The provider's `error.message`, or the start of the body without one.
        message: String,
    },
    /// HTTP 5xx (other than 529) or `api_error`.
    #[error("server error ({status}): {message}")]
    Server {
        /// The HTTP status code.
        status: u16,
        /// The provider's `error.message`, or the start of the body without one.
        message: String,
    },
    /// Any other status the API answered with.
    #[error("unexpected HTTP status {status}: {message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The provider's `error.message`, or the start of the body without one.
        message: String,
    },
    /// The connection could not be made or broke before a response started.
    #[error("network error: {message}")]
    Network {
        /// What the HTTP client reported.
        message: String,
    },
    /// No response, or no stream event, within the allowed time.
    #[error("timed out after {0:?} without a reply")]
    Timeout(Duration),
    /// The stream ended before `message_stop` (or its equivalent).
    #[error("the reply stream was cut short: {message}")]
    StreamCutShort {
        /// Where the stream stopped, or what the transport reported.
        message: String,
    },
    /// The provider sent an `error` event in the middle of a stream.
    #[error("the provider reported an error mid-stream ({kind}): {message}")]
    StreamError {
        /// The `error.type` of the event, such as `overloaded_error`.
        kind: String,
        /// The event's `error.message`.
        message: String,
    },
    /// The provider sent something that is not valid for the protocol.
    #[error("could not understand the provider's reply: {message}")]
    Protocol {
        /// What could not be parsed, and why.
        message: String,
    },
    /// The scripted or demo model has no more replies.
    #[error("{0}")]
    ScriptExhausted(String),
}

/// Why no model could be chosen from the flags and environment
/// ([`crate::model::config::select_model`]).
#[derive(Debug, thiserror::Error)]
pub enum SelectModelError {
    /// The lesson's embedded demo script does not parse.
    #[error("the lesson's demo script is invalid: {0}")]
    DemoScript(serde_json::Error),
    /// Anthropic was chosen, but no key or token is set.
    #[error("the anthropic provider needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN")]
    MissingAnthropicCredentials,
    /// The OpenAI-compatible client was chosen, but no URL is set.
    #[error(
        "the openai provider needs OPENAI_BASE_URL (for example http://localhost:11434/v1 for Ollama)"
    )]
    MissingOpenAiBaseUrl,
    /// The client could not be built.
    #[error(transparent)]
    Client(#[from] ApiError),
}

/// `--provider` names no provider this course speaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{0}`: use anthropic, openai or demo")]
pub struct UnknownProvider(pub String);

/// The shortest credential [`ApiError::redact`] scrubs out.
pub const MIN_REDACTED_LEN: usize = 8;

fn retry_hint(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(delay) => format!(" (retry after {}s)", delay.as_secs_f64()),
        None => String::new(),
    }
}

impl ApiError {
    /// Whether sending the same request again later may succeed.
    ///
    /// Chapter 11 retries exactly these; everything else is final.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. }
            | Self::Overloaded { .. }
            | Self::Server { .. }
            | Self::Network { .. }
            | Self::Timeout(_)
            | Self::StreamCutShort { .. } => true,
            Self::StreamError { kind, .. } => {
                matches!(
                    kind.as_str(),
                    "overloaded_error" | "api_error" | "rate_limit_error"
                )
            }
            _ => false,
        }
    }

    /// Replaces every occurrence of each secret in the error's text with
    /// `***`.
    ///
    /// Error text comes from outside (the body of an error reply, an `error`
    /// event, a transport failure), and a proxy that echoes request headers
    /// back would put the API key there. Clients pass every error through
    /// this before returning it, so no error can carry a credential into a
    /// terminal or a log.
    ///
    /// Secrets shorter than [`MIN_REDACTED_LEN`] are left alone: they are
    /// placeholders for local gateways (`"dummy"`), not real keys, and
    /// replacing them would garble ordinary words in the message.
    pub fn redact(self, secrets: &[&str]) -> Self {
        let secrets: Vec<&str> = secrets
            .iter()
            .copied()
            .filter(|secret| secret.chars().count() >= MIN_REDACTED_LEN)
            .collect();
        if secrets.is_empty() {
            return self;
        }
        self.map_text(|text| {
            secrets
                .iter()
                .fold(text, |text, secret| text.replace(secret, "***"))
        })
    }

    /// Applies `change` to every piece of text the error holds.
    fn map_text(self, change: impl Fn(String) -> String) -> Self {
        match self {
            Self::RateLimited {
                retry_after,
                message,
            } => Self::RateLimited {
                retry_after,
                message: change(message),
            },
            Self::Overloaded { message } => Self::Overloaded {
                message: change(message),
            },
            Self::PromptTooLong { message } => Self::PromptTooLong {
                message: change(message),
            },
            Self::InvalidRequest { message } => Self::InvalidRequest {
                message: change(message),
            },
            Self::Authentication { message } => Self::Authentication {
                message: change(message),
            },
            Self::Server { status, message } => Self::Server {
                status,
                message: change(message),
            },
            Self::Http { status, message } => Self::Http {
                status,
                message: change(message),
            },
            Self::Network { message } => Self::Network {
                message: change(message),
            },
            Self::Timeout(after) => Self::Timeout(after),
            Self::StreamCutShort { message } => Self::StreamCutShort {
                message: change(message),
            },
            Self::StreamError { kind, message } => Self::StreamError {
                kind: change(kind),
                message: change(message),
            },
            Self::Protocol { message } => Self::Protocol {
                message: change(message),
            },
            Self::ScriptExhausted(message) => Self::ScriptExhausted(change(message)),
        }
    }

    /// Classifies an error response by HTTP status, the body's `error.type`
    /// and, for 429, the `retry-after` header.
    pub fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> Self {
        let (kind, message) = parse_error_body(body);
        let message = message.unwrap_or_else(|| truncate_for_message(body));
        let too_long =
            kind.as_deref() == Some("request_too_large") || says_context_overflow(&message);
        match (status, kind.as_deref()) {
            (429, _) | (_, Some("rate_limit_error")) => Self::RateLimited {
                retry_after,
                message,
            },
            (529, _) | (_, Some("overloaded_error")) => Self::Overloaded { message },
            (400 | 413, _) if too_long => Self::PromptTooLong { message },
            // The status decides before `error.type`: OpenAI answers a bad key
            // with 401 and the type `invalid_request_error`.
            (401 | 403, _) | (_, Some("authentication_error" | "permission_error")) => {
                Self::Authentication { message }
            }
            (400, _) | (_, Some("invalid_request_error")) => Self::InvalidRequest { message },
            (500..=599, _) => Self::Server { status, message },
            _ => Self::Http { status, message },
        }
    }

    /// Classifies an `error` event received mid-stream.
    pub fn from_stream_error(kind: &str, message: &str) -> Self {
        match kind {
            "overloaded_error" => Self::Overloaded {
                message: message.to_string(),
            },
            "rate_limit_error" => Self::RateLimited {
                retry_after: None,
                message: message.to_string(),
            },
            _ if says_context_overflow(message) => Self::PromptTooLong {
                message: message.to_string(),
            },
            _ => Self::StreamError {
                kind: kind.to_string(),
                message: message.to_string(),
            },
        }
    }
}

/// Whether an error message says the prompt no longer fits the context
/// window. Anthropic, OpenAI and the local servers word it differently.
fn says_context_overflow(message: &str) -> bool {
    [
        "prompt is too long",
        "context length",
        "context_length_exceeded",
        "maximum context",
    ]
    .iter()
    .any(|phrase| message.contains(phrase))
}

/// Reads `{"error": {"type": ..., "message": ...}}`, the shape both the
/// Anthropic and the OpenAI APIs use (OpenAI puts the kind in `code` or
/// `type`).
fn parse_error_body(body: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return (None, None);
    };
    let error = &value["error"];
    let kind = error["type"]
        .as_str()
        .or_else(|| error["code"].as_str())
        .map(str::to_string);
    let message = error["message"]
        .as_str()
        .or_else(|| value["message"].as_str())
        .map(str::to_string);
    (kind, message)
}

/// Error bodies that are not JSON (an HTML page from a proxy, say) are cut
/// so one line of the terminal can show them.
fn truncate_for_message(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return "(empty body)".to_string();
    }
    crate::text::truncate_chars(body, 300)
}

/// Parses a `retry-after` header value given in seconds (fractions allowed).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_status_and_type() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(
            ApiError::from_status(529, body, None),
            ApiError::Overloaded { .. }
        ));
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            ApiError::from_status(400, body, None),
            ApiError::PromptTooLong { .. }
        ));
        let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert!(matches!(
            ApiError::from_status(401, body, None),
            ApiError::Authentication { .. }
        ));
        let limited = ApiError::from_status(429, "{}", Some(Duration::from_secs(3)));
        assert_eq!(
            limited,
            ApiError::RateLimited {
                retry_after: Some(Duration::from_secs(3)),
                message: "{}".into()
            }
        );
        assert!(matches!(
            ApiError::from_status(502, "<html>bad gateway</html>", None),
            ApiError::Server { status: 502, .. }
        ));
    }

    #[test]
    fn redact_hides_secrets_everywhere_but_not_placeholders() {
        let error = ApiError::StreamError {
            kind: "sk-ant-0001".into(),
            message: "bad key sk-ant-0001, token tok-12345678 in chunk".into(),
        };
        assert_eq!(
            error.redact(&["sk-ant-0001", "", "k", "tok-12345678"]),
            ApiError::StreamError {
                kind: "***".into(),
                message: "bad key ***, token *** in chunk".into(),
            }
        );
        let timeout = ApiError::Timeout(Duration::from_secs(1));
        assert_eq!(timeout.clone().redact(&["11111111"]), timeout);
    }

    #[test]
    fn retry_after_accepts_fractions_and_rejects_garbage() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
