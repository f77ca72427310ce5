//! Reading a server-sent event stream with an idle timeout.
//!
//! Both HTTP clients stream their replies as SSE. This module turns a
//! `reqwest::Response` into a sequence of `(event, data)` pairs and turns a
//! silent connection into [`ApiError::Timeout`] instead of a hang.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use crate::error::{ApiError, parse_retry_after};

type EventStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// The events of one streamed reply.
pub(crate) struct SseStream {
    events: EventStream,
    idle: Duration,
}

impl SseStream {
    /// Checks the status, then starts reading events. A non-success status
    /// becomes a typed error built from the body and `retry-after`.
    pub(crate) async fn open(
        response: reqwest::Response,
        idle: Duration,
    ) -> Result<Self, ApiError> {
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(parse_retry_after);
            let body = tokio::time::timeout(idle, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            return Err(ApiError::from_status(status.as_u16(), &body, retry_after));
        }
        // A blank line after the body dispatches a last event that the
        // server did not end with one. SSE parsers drop such an event, but
        // the official SDKs keep it, and real streams (and the SDKs' own
        // recorded test streams) end that way: the reply is complete.
        let body = response
            .bytes_stream()
            .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
            .chain(futures::stream::once(async { Ok(b"\n\n".to_vec()) }));
        Ok(Self {
            events: Box::pin(body.eventsource()),
            idle,
        })
    }

    /// The next event, `None` at the end of the body.
    pub(crate) async fn next(&mut self) -> Option<Result<Event, ApiError>> {
        match tokio::time::timeout(self.idle, self.events.next()).await {
            Err(_elapsed) => Some(Err(ApiError::Timeout(self.idle))),
            Ok(None) => None,
            Ok(Some(Ok(event))) => Some(Ok(event)),
            Ok(Some(Err(EventStreamError::Transport(error)))) => Some(Err(transport_error(&error))),
            Ok(Some(Err(error))) => Some(Err(ApiError::Protocol {
                message: error.to_string(),
            })),
        }
    }
}

/// Classifies a reqwest failure. Errors that happen after the stream began
/// mean the reply was cut short.
pub(crate) fn transport_error(error: &reqwest::Error) -> ApiError {
    if error.is_timeout() {
        ApiError::Timeout(Duration::ZERO)
    } else if error.is_body() || error.is_decode() {
        ApiError::StreamCutShort {
            message: describe(error),
        }
    } else {
        ApiError::Network {
            message: describe(error),
        }
    }
}

/// The error and its causes on one line.
///
/// reqwest's own message is only "error sending request for url (…)"; the
/// useful part ("Connection refused", "dns error", "invalid certificate")
/// is in the chain of sources underneath, so it is appended here.
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some layers repeat their inner error in their own message.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Sends a request, turning a slow or failed connection into a typed error.
pub(crate) async fn send(
    builder: reqwest::RequestBuilder,
    response_timeout: Duration,
) -> Result<reqwest::Response, ApiError> {
    match tokio::time::timeout(response_timeout, builder.send()).await {
        Err(_elapsed) => Err(ApiError::Timeout(response_timeout)),
        Ok(Err(error)) if error.is_timeout() => Err(ApiError::Timeout(response_timeout)),
        Ok(Err(error)) => Err(ApiError::Network {
            message: describe(&error),
        }),
        Ok(Ok(response)) => Ok(response),
    }
}

/// An HTTP client with the connect timeout both providers use. Fails only
/// if the TLS backend cannot start.
pub(crate) fn http_client(connect_timeout: Duration) -> Result<reqwest::Client, ApiError> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|error| ApiError::Network {
            message: describe(&error),
        })
}
