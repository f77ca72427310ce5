//! Why a server could not be configured or connected.
//!
//! None of these stops the agent: an entry of `.mcp.json` that is refused
//! ([`InvalidServer`]) is skipped with a notice, and a server that cannot
//! be connected ([`ConnectError`]) is a `connect_mcp` error result the
//! model reads. Each message is the text the notice or the result shows;
//! none quotes a header's value or a URL's expanded text, which may hold a
//! secret.

use std::path::PathBuf;
use std::time::Duration;

/// Why an entry of `.mcp.json` is refused.
#[derive(Debug, thiserror::Error)]
pub enum InvalidServer {
    /// The entry does not have the shape of a server (serde's reason).
    #[error("{0}")]
    Malformed(#[from] serde_json::Error),
    /// A stdio entry with a `url`: the `type` was forgotten.
    #[error("`url` needs `\"type\": \"http\"`")]
    UrlWithoutHttp,
    /// A stdio entry with nothing to run.
    #[error("`command` is empty")]
    EmptyCommand,
    /// A stdio entry with HTTP fields.
    #[error("a stdio server has no `url` or `headers`")]
    StdioWithUrl,
    /// An HTTP entry with nowhere to go.
    #[error("an http server needs a `url`")]
    HttpWithoutUrl,
    /// An HTTP entry with fields of a process.
    #[error("an http server is reached at its `url`; it has no `command`, `args` or `env`")]
    HttpWithCommand,
    /// The protocol's old HTTP+SSE transport.
    #[error(
        "transport `sse` (the protocol's old HTTP+SSE transport) is not supported; \
         use `\"type\": \"http\"` (Streamable HTTP) with the server's MCP endpoint"
    )]
    Sse,
    /// Any other transport.
    #[error("transport `{0}` is not supported here; use `stdio` or `http`")]
    UnknownTransport(String),
}

/// Why `${VAR}`s could not be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("`${{` without a closing `}}`")]
    Unclosed,
    /// The variable is unset and has no `:-default`.
    #[error("the variable `{0}` is not set")]
    Unset(String),
}

/// Why the HTTP transport to a server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HttpSetupError {
    #[error("`{0}` is not a valid header name")]
    HeaderName(String),
    /// The header's value is not valid HTTP (the value is never quoted).
    #[error("the value of header `{0}` is not a valid header value")]
    HeaderValue(String),
    #[error("cannot build an HTTP client: {0}")]
    Client(reqwest::Error),
}

/// Why a server could not be connected.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot open its log file {}: {error}", .path.display())]
    Log {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot run `{command}`: {error}")]
    Spawn {
        command: String,
        error: std::io::Error,
    },
    #[error("its `url`: {0}")]
    Url(ExpandError),
    #[error("its header `{header}`: {error}")]
    Header { header: String, error: ExpandError },
    #[error(transparent)]
    Http(#[from] HttpSetupError),
    /// rmcp's `initialize` exchange failed (its reason).
    #[error("the handshake failed: {0}")]
    Handshake(String),
    /// `tools/list` failed (rmcp's reason).
    #[error("tools/list failed: {0}")]
    ListTools(String),
    #[error(
        "no answer to the handshake within {} s (a server must write only \
         JSON-RPC messages to its standard output)",
        .0.as_secs_f64()
    )]
    StdioTimeout(Duration),
    #[error("no answer to the handshake within {} s from {endpoint}", .timeout.as_secs_f64())]
    HttpTimeout { timeout: Duration, endpoint: String },
    /// A stdio server's failure, with the last lines it wrote to its log.
    #[error("{reason}. The end of its log ({}):\n{tail}", .log.display())]
    WithLogTail {
        reason: Box<ConnectError>,
        log: PathBuf,
        tail: String,
    },
}
