//! The client side of one connection: what the agent tells a server about
//! itself, and how it answers what a server sends on its own.
//!
//! Between the replies to our requests a real server sends messages of its
//! own, and a client that only expects replies breaks on the first one:
//!
//! * `notifications/tools/list_changed`: the server's tools changed. The
//!   client lists them again and the hub updates the tool pool.
//! * `notifications/progress`: how far a call has got (every call carries
//!   a progress token). Shown as a notice.
//! * `notifications/message`: a log line. Shown as a notice.
//! * `roots/list`, a *request* the server sends us: which directories the
//!   client shares. The answer is the workspace root, as a `file://` URI;
//!   the handshake declares the `roots` capability, or a server would not
//!   ask.
//!
//! rmcp runs each of these in a task of its own, so a handler may send
//! requests (the re-listing does) without blocking the connection.

// Roots and logging are deprecated in the SDK's newest protocol revision;
// this client negotiates 2025-11-25, the newest with a handshake, where both
// are current and the reference servers use them.
#![allow(deprecated)]

use std::path::Path;
use std::sync::Weak;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion, Root,
    RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;
use shared::notice::Notices;

use super::{Inner, MCP_TAG};

// ANCHOR: handler
/// The agent's side of one connection to server `server`.
pub struct Client {
    /// The server's name in `.mcp.json`.
    pub(super) server: String,
    /// Which connection to this server this is: a re-listing that arrives
    /// after a reconnect must not update the new connection's tools.
    pub(super) connection: u64,
    /// The workspace root as a `file://` URI, the one root we share.
    pub(super) root_uri: String,
    pub(super) notices: Notices,
    /// The hub, to update the tools; weak, since the hub owns the
    /// connection that owns this handler.
    pub(super) hub: Weak<Inner>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        // One capability: we answer `roots/list`. (We never change our
        // roots, so there is no `listChanged`.)
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(RootsCapabilities::default());
        ClientConfig::new(
            capabilities,
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.notices.emit(
            MCP_TAG,
            format!(
                "{}: asked for roots; sharing {}",
                self.server, self.root_uri
            ),
        );
        Ok(ListRootsResult::new(vec![
            Root::new(self.root_uri.clone()).with_name("workspace"),
        ]))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let amount = match params.total {
            Some(total) => format!("{}/{}", params.progress, total),
            None => params.progress.to_string(),
        };
        let message = params
            .message
            .map(|message| format!(": {message}"))
            .unwrap_or_default();
        self.notices.emit(
            MCP_TAG,
            format!("{}: progress {amount}{message}", self.server),
        );
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = match &params.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|level| level.as_str().map(str::to_string))
            .unwrap_or_else(|| "log".to_string());
        self.notices
            .emit(MCP_TAG, format!("{} {level}: {text}", self.server));
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(hub) = self.hub.upgrade() else {
            return;
        };
        hub.relist_started();
        match context.peer.list_all_tools().await {
            Ok(tools) => hub.replace_tools(&self.server, self.connection, tools),
            Err(error) => self.notices.emit(
                MCP_TAG,
                format!(
                    "{}: its tool list changed, but listing it again failed: {error}",
                    self.server
                ),
            ),
        }
        hub.relist_ended();
    }
}
// ANCHOR_END: handler

/// `path` as a `file://` URI: every byte outside the unreserved characters
/// and `/` percent-encoded, so a space or a `#` in a directory name cannot
/// change what the URI means.
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_becomes_a_file_uri() {
        assert_eq!(
            file_uri(Path::new("/tmp/my project/#1")),
            "file:///tmp/my%20project/%231"
        );
    }
}
