//! # The course's MCP server
//!
//! A small server on the official Rust SDK's server side, so that lesson
//! 18's demo and tests talk to a real MCP server over stdio without the
//! network. It serves a built-in corpus of four short documents and shows
//! each thing a client has to handle:
//!
//! | tool | what it shows |
//! | --- | --- |
//! | `search_docs` | a plain text result, claimed read-only |
//! | `get_doc` | an embedded resource and a resource link; `isError` for an unknown title |
//! | `doc_stats` | `structuredContent` and no text at all |
//! | `logo` | an image |
//! | `reindex` | progress notifications and log messages during one call |
//! | `list_roots` | a request from the server to the client (`roots/list`) |
//! | `enable_drafts` | a tool set that changes: adds `search_drafts`, then `notifications/tools/list_changed` |
//! | `delete_doc` | a tool the server marks destructive |
//! | `wait` | a call that takes as long as asked (logging first that it waits), to try timeouts and killed servers |
//!
//! The handler is written by hand against [`ServerHandler`] (no macros),
//! so every message it answers is visible here. Start at
//! [`DocsServer::call_tool`].
//!
//! It speaks both transports of the protocol: standard input and output
//! ([`serve_stdio`], one client, the server a child of it) and Streamable
//! HTTP ([`serve_http`], at `/mcp`, many clients, each in a session of its
//! own).

// Roots and logging are deprecated in the SDK's newest protocol revision,
// which this server does not speak; it negotiates 2025-11-25, where both
// are current.
#![allow(deprecated)]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, Resource,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// The server's name in its `initialize` answer.
pub const SERVER_NAME: &str = "course-docs";

/// The documents the server starts with: title and text.
const CORPUS: &[(&str, &str)] = &[
    (
        "worktree-cleanup",
        "Worktree cleanup policy: a worktree is removed once its task is completed and its \
         branch merged; remove_worktree refuses uncommitted changes unless told to discard them.",
    ),
    (
        "deploy",
        "Deploying: run the tests, tag the release, then push the tag; the pipeline deploys \
         tagged commits only.",
    ),
    (
        "permissions",
        "Permissions: destructive tools ask the user first; read-only tools run without asking.",
    ),
    (
        "mcp",
        "MCP servers are configured in .mcp.json at the workspace root and connected with \
         connect_mcp; their tools appear as mcp__<server>__<tool>.",
    ),
];

/// Drafts, searchable once `enable_drafts` was called.
const DRAFTS: &[(&str, &str)] = &[(
    "release-notes",
    "Draft release notes: lesson 18 connects MCP servers over stdio.",
)];

/// The longest `wait` the server agrees to, in seconds.
const MAX_WAIT_SECONDS: u64 = 600;

/// The server's state: the corpus (which `delete_doc` changes) and whether
/// the drafts tool is on.
#[derive(Debug)]
struct State {
    docs: BTreeMap<String, String>,
    drafts_enabled: bool,
    /// The least severe log message the client wants (`logging/setLevel`);
    /// `info` until it says otherwise.
    log_level: LoggingLevel,
}

/// The docs server. Clones share one state.
#[derive(Debug, Clone)]
pub struct DocsServer {
    state: Arc<Mutex<State>>,
}

impl Default for DocsServer {
    fn default() -> Self {
        Self::new()
    }
}

impl DocsServer {
    /// A server with the built-in corpus and the drafts tool off.
    pub fn new() -> Self {
        let docs = CORPUS
            .iter()
            .map(|(title, text)| (title.to_string(), text.to_string()))
            .collect();
        Self {
            state: Arc::new(Mutex::new(State {
                docs,
                drafts_enabled: false,
                log_level: LoggingLevel::Info,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The tools as `tools/list` describes them now.
    pub fn tools(&self) -> Vec<Tool> {
        let read_only = || ToolAnnotations::new().read_only(true);
        let mut tools = vec![
            tool(
                "search_docs",
                "Search the documentation for a word or phrase; returns the matching documents.",
                object(
                    json!({"query": {"type": "string", "description": "Text to look for"}}),
                    &["query"],
                ),
                read_only(),
            ),
            tool(
                "get_doc",
                "Fetch one document by title, as an embedded resource.",
                object(json!({"title": {"type": "string"}}), &["title"]),
                read_only(),
            ),
            tool(
                "doc_stats",
                "Counts of documents and words, as structured content.",
                object(json!({}), &[]),
                read_only(),
            ),
            tool(
                "logo",
                "The documentation's logo, as an image.",
                object(json!({}), &[]),
                read_only(),
            ),
            tool(
                "reindex",
                "Rebuild the search index, reporting progress and logging what it does.",
                object(json!({}), &[]),
                read_only().idempotent(true),
            ),
            tool(
                "list_roots",
                "Ask the client which directories it shares with this server (roots/list).",
                object(json!({}), &[]),
                read_only(),
            ),
            tool(
                "enable_drafts",
                "Turn on the search_drafts tool (the server's tool list changes).",
                object(json!({}), &[]),
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(false)
                    .idempotent(true),
            ),
            tool(
                "delete_doc",
                "Delete a document from the corpus for good.",
                object(json!({"title": {"type": "string"}}), &["title"]),
                ToolAnnotations::new().read_only(false).destructive(true),
            ),
            tool(
                "wait",
                "Wait the given number of seconds, then say so.",
                object(
                    json!({"seconds": {"type": "number", "minimum": 0}}),
                    &["seconds"],
                ),
                read_only(),
            ),
        ];
        if self.lock().drafts_enabled {
            tools.push(tool(
                "search_drafts",
                "Search the draft documents.",
                object(json!({"query": {"type": "string"}}), &["query"]),
                read_only(),
            ));
        }
        tools
    }

    // ANCHOR: call_tool
    /// Runs one tool. A failure of the tool itself is a result with
    /// `isError: true`, which the client shows the model; an unknown tool is
    /// a JSON-RPC error, as the protocol says.
    async fn run(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = params.arguments.unwrap_or_default();
        let text_arg = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or_default();
        match params.name.as_ref() {
            "search_docs" => Ok(search(&self.lock().docs, text_arg("query"))),
            "search_drafts" if self.lock().drafts_enabled => {
                let drafts = DRAFTS
                    .iter()
                    .map(|(title, text)| (title.to_string(), text.to_string()))
                    .collect();
                Ok(search(&drafts, text_arg("query")))
            }
            "get_doc" => {
                let title = text_arg("title");
                let Some(text) = self.lock().docs.get(title).cloned() else {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "no document titled `{title}`"
                    ))]));
                };
                let uri = format!("docs://{title}");
                Ok(CallToolResult::success(vec![
                    ContentBlock::embedded_text(uri.clone(), text),
                    ContentBlock::resource_link(Resource::new(uri, title)),
                ]))
            }
            "doc_stats" => {
                let state = self.lock();
                let words: usize = state
                    .docs
                    .values()
                    .map(|t| t.split_whitespace().count())
                    .sum();
                let mut result = CallToolResult::structured(
                    json!({"documents": state.docs.len(), "words": words}),
                );
                // Structured content only: the client has to show it itself.
                result.content.clear();
                Ok(result)
            }
            "logo" => Ok(CallToolResult::success(vec![ContentBlock::image(
                // A 1×1 transparent PNG.
                "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
                "image/png",
            )])),
            "reindex" => self.reindex(&context).await,
            "list_roots" => {
                let roots = context.peer.list_roots().await.map_err(|error| {
                    ErrorData::internal_error(format!("roots/list failed: {error}"), None)
                })?;
                let uris: Vec<String> = roots.roots.into_iter().map(|root| root.uri).collect();
                Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "The client shares {} root(s): {}",
                    uris.len(),
                    uris.join(", ")
                ))]))
            }
            "enable_drafts" => {
                let changed = !std::mem::replace(&mut self.lock().drafts_enabled, true);
                if changed {
                    // Tell the client, which lists the tools again.
                    let _ = context.peer.notify_tool_list_changed().await;
                }
                let text = if changed {
                    "search_drafts is now available."
                } else {
                    "search_drafts was already available."
                };
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
            }
            "delete_doc" => {
                let title = text_arg("title");
                match self.lock().docs.remove(title) {
                    Some(_) => Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                        "deleted `{title}`"
                    ))])),
                    None => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "no document titled `{title}` to delete"
                    ))])),
                }
            }
            "wait" => {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                let seconds = seconds.clamp(0.0, MAX_WAIT_SECONDS as f64);
                // Said before the wait, so a client can tell the call has begun.
                self.log(&context, LoggingLevel::Info, format!("waiting {seconds} s"))
                    .await;
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "waited {seconds} s"
                ))]))
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }
    // ANCHOR_END: call_tool

    /// `reindex`: three steps, each a progress notification (when the call
    /// carried a progress token) and a log message.
    async fn reindex(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let titles: Vec<String> = self.lock().docs.keys().cloned().collect();
        let token = context.meta.get_progress_token();
        let total = titles.len();
        for (done, title) in titles.iter().enumerate() {
            self.log(context, LoggingLevel::Info, format!("indexed {title}"))
                .await;
            if let Some(token) = &token {
                let _ = context
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), (done + 1) as f64)
                            .with_total(total as f64)
                            .with_message(format!("indexed {title}")),
                    )
                    .await;
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "reindexed {total} documents"
        ))]))
    }
}

impl DocsServer {
    /// Sends a log message, unless it is less severe than the level the
    /// client set.
    async fn log(&self, context: &RequestContext<RoleServer>, level: LoggingLevel, text: String) {
        if (level as u8) < (self.lock().log_level as u8) {
            return;
        }
        let _ = context
            .peer
            .notify_logging_message(LoggingMessageNotificationParam::new(level, json!(text)))
            .await;
    }
}

impl ServerHandler for DocsServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
        .with_instructions("Search the course documentation with search_docs.")
    }

    /// The revisions with an `initialize` handshake and server-to-client
    /// requests (which `list_roots` needs).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    /// `logging/setLevel`: the server declares the logging capability, so
    /// it answers this and sends only messages at least this severe.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.lock().log_level = request.level;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run(request, context).await.map(CallToolResponse::from)
    }
}

/// Serves one client on standard input and output until it disconnects.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let service = DocsServer::new()
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await?;
    service.waiting().await?;
    Ok(())
}

// ANCHOR: serve_http
/// Serves Streamable HTTP at `http://{addr}/mcp` until the process ends,
/// after writing `listening on http://…/mcp` to standard error (with the
/// port the system chose, when `addr`'s is 0). Each client gets a session
/// of its own, with a server of its own; requests whose `Host` is not a
/// loopback name are refused (rmcp's default), so a web page cannot reach
/// the server through DNS rebinding. With `bearer_token`, every request
/// must carry `Authorization: Bearer <token>` or gets 401.
pub async fn serve_http(addr: SocketAddr, bearer_token: Option<String>) -> anyhow::Result<()> {
    let service = StreamableHttpService::new(
        || Ok(DocsServer::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(token) = bearer_token {
        let expected = Arc::new(format!("Bearer {token}"));
        router = router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let expected = Arc::clone(&expected);
                async move {
                    let given = request.headers().get(header::AUTHORIZATION);
                    if given.map(HeaderValue::as_bytes) == Some(expected.as_bytes()) {
                        next.run(request).await
                    } else {
                        (
                            StatusCode::UNAUTHORIZED,
                            [(header::WWW_AUTHENTICATE, "Bearer")],
                            "a bearer token is required",
                        )
                            .into_response()
                    }
                }
            },
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    // The one line a test (or a person) waits for before connecting.
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router).await?;
    Ok(())
}
// ANCHOR_END: serve_http

/// The documents of `docs` that contain `query` (case-insensitive).
fn search(docs: &BTreeMap<String, String>, query: &str) -> CallToolResult {
    let needle = query.to_lowercase();
    let hits: Vec<String> = docs
        .iter()
        .filter(|(title, text)| {
            title.to_lowercase().contains(&needle) || text.to_lowercase().contains(&needle)
        })
        .map(|(title, text)| format!("{title}: {text}"))
        .collect();
    let text = if hits.is_empty() {
        format!("no document mentions `{query}`")
    } else {
        hits.join("\n")
    };
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A tool description.
fn tool(
    name: &'static str,
    description: &'static str,
    schema: JsonObject,
    annotations: ToolAnnotations,
) -> Tool {
    Tool::new(name, description, Arc::new(schema)).annotate(annotations)
}

/// An object schema with `properties`, of which `required` must be given.
fn object(properties: Value, required: &[&str]) -> JsonObject {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}
