//! Streamable HTTP: the protocol to a server that is already running,
//! somewhere else.
//!
//! Over stdio the server is our child and its pipes are the connection.
//! Over HTTP every message we send is a `POST` to the server's one
//! endpoint (`…/mcp`); the answer is either one JSON message or an SSE
//! stream of messages (the server's notifications and requests, then the
//! reply), and a `GET` opens a stream on which the server may speak at
//! any time. The server names the conversation with a session id in the
//! `Mcp-Session-Id` header of its `initialize` answer; every later request
//! carries it, and a `404` to one means the session is gone.
//!
//! All of that protocol is rmcp's (`StreamableHttpClientTransport`: the
//! session id, the SSE streams and their `retry`/reconnect, the
//! re-`initialize` after a `404`). What it leaves to the caller is the
//! HTTP plumbing: one trait, [`StreamableHttpClient`], "send this POST,
//! GET or DELETE". rmcp implements it for reqwest 0.13, which would bring a
//! second HTTP client and TLS stack into the build; [`HttpClient`]
//! implements it over the workspace's reqwest, which the model clients
//! already use.
//!
//! Header values are secrets (a bearer token, an API key): they are marked
//! sensitive, so `Debug` — which rmcp's transport config derives — prints
//! `Sensitive` instead, and nothing here logs them. An error never quotes
//! the URL either (reqwest's would), as a URL may carry a key too.
//!
//! When the server answers `404` to a request of our session (it was
//! restarted, or let the session expire), rmcp initializes a new session
//! once and sends the request again; [`HttpClient`] says so in a notice,
//! since whatever the server kept for the old session is gone.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use reqwest::{RequestBuilder, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use shared::notice::Notices;
use sse_stream::{Sse, SseStream};

use super::MCP_TAG;
use super::error::HttpSetupError;

/// The header that carries the session id.
const SESSION_ID: &str = "mcp-session-id";
/// The header that resumes an SSE stream after the last event seen.
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
/// How much of an error response's body an error message quotes.
const ERROR_BODY_CHARS: usize = 300;
/// How many times in a row rmcp tries to reopen a stream that broke (its
/// default is forever). A call whose answer was coming on a stream that
/// broke because the server died would otherwise wait for its timeout; with
/// three tries (after 0, 2 and 4 s) it gets an error result within seconds.
/// The server's own stream is opened again with the next new session.
const MAX_RECONNECTS: usize = 3;
/// The longest wait between two of those tries.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(30);

type HttpError = StreamableHttpError<reqwest::Error>;

// ANCHOR: transport
/// The transport to server `server` at `url`, sending `headers` (already
/// expanded) with every request, and telling `notices` when the session
/// had to be started again. A header that is not valid HTTP is an error
/// naming the header, never its value.
pub fn transport(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    notices: Notices,
) -> Result<StreamableHttpClientTransport<HttpClient>, HttpSetupError> {
    let config = config(url, headers)?;
    let client = reqwest::Client::builder()
        // A redirect to another host would carry the headers there.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(HttpSetupError::Client)?;
    let client = HttpClient {
        client,
        server: Arc::from(server),
        notices,
    };
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// rmcp's configuration of the transport: the URL, the headers (their
/// values marked sensitive, so its derived `Debug` does not print them),
/// a new session when the server forgets ours, and the reconnect delays.
pub fn config(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig, HttpSetupError> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = HeaderName::try_from(name.as_str())
            .map_err(|_| HttpSetupError::HeaderName(name.clone()))?;
        let mut value =
            HeaderValue::from_str(value).map_err(|_| HttpSetupError::HeaderValue(name.clone()))?;
        value.set_sensitive(true);
        custom.insert(header, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(custom)
        .reinit_on_expired_session(true);
    let mut backoff = ExponentialBackoff::default();
    backoff.max_times = Some(MAX_RECONNECTS);
    backoff.max_delay = Some(MAX_RECONNECT_DELAY);
    config.retry_config = Arc::new(backoff);
    Ok(config)
}
// ANCHOR_END: transport

/// rmcp's HTTP plumbing over the workspace's reqwest, for one server.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    /// The server's name in `.mcp.json`, for the notice.
    server: Arc<str>,
    notices: Notices,
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let had_session = session_id.is_some();
        let request = self
            .client
            .post(uri.as_ref())
            .header(ACCEPT, format!("{JSON}, {EVENT_STREAM}"))
            .json(&message);
        let response = send(request, session_id, None, auth_header, custom_headers).await?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            // rmcp answers this by initializing a new session, once.
            self.notices.emit(
                MCP_TAG,
                format!(
                    "{}: the server no longer knows our session (HTTP 404); starting a new one",
                    self.server
                ),
            );
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        // A notification or a reply to the server needs no answer.
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            // A JSON-RPC error in an error response is the server's answer.
            if let Ok(error @ JsonRpcMessage::Error(_)) =
                serde_json::from_str::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(error, session));
            }
            return Err(status_error(status, &body));
        }
        match media_type(&response).as_deref() {
            Some(EVENT_STREAM) => Ok(StreamableHttpPostResponse::Sse(events(response), session)),
            Some(JSON) => {
                let body = response.bytes().await.map_err(client_error)?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(message) => Ok(StreamableHttpPostResponse::Json(message, session)),
                    Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                    Err(error) => Err(StreamableHttpError::Deserialize(error)),
                }
            }
            _ if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(str::to_string),
            )),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let request = self.client.delete(uri.as_ref());
        let response = send(request, Some(session_id), None, auth_header, custom_headers).await?;
        let status = response.status();
        // A server may not let clients end sessions; that is fine.
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(status_error(status, ""))
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let request = self.client.get(uri.as_ref()).header(ACCEPT, EVENT_STREAM);
        let response = send(
            request,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
        )
        .await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            // The server only speaks when asked; rmcp carries on without.
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(status_error(status, &body));
        }
        match media_type(&response).as_deref() {
            Some(EVENT_STREAM) => Ok(events(response)),
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(str::to_string),
            )),
        }
    }
}

/// Sends `request` with the session id, the last event seen, and the
/// configured headers.
async fn send(
    mut request: RequestBuilder,
    session_id: Option<Arc<str>>,
    last_event_id: Option<String>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> Result<Response, HttpError> {
    if let Some(session_id) = session_id {
        request = request.header(SESSION_ID, session_id.as_ref());
    }
    if let Some(last_event_id) = last_event_id {
        request = request.header(LAST_EVENT_ID, last_event_id);
    }
    if let Some(token) = auth_header {
        request = request.bearer_auth(token);
    }
    for (name, value) in custom_headers {
        request = request.header(name, value);
    }
    request.send().await.map_err(client_error)
}

/// reqwest's error, without the URL it would quote.
fn client_error(error: reqwest::Error) -> HttpError {
    StreamableHttpError::Client(error.without_url())
}

/// The response's media type, without parameters (`; charset=…`).
fn media_type(response: &Response) -> Option<String> {
    let value = response.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next().unwrap_or_default().trim();
    Some(essence.to_ascii_lowercase())
}

/// The SSE events of a streaming response.
fn events(response: Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(response.bytes_stream()).boxed()
}

/// An HTTP error status as an error the model can read: the status and
/// the start of what the server said.
fn status_error(status: StatusCode, body: &str) -> HttpError {
    let said: String = body.trim().chars().take(ERROR_BODY_CHARS).collect();
    let text = if said.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {said}")
    };
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(text))
}
