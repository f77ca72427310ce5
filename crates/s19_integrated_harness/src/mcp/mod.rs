//! MCP: tools from other programs, over a standard protocol.
//!
//! Every tool so far was written into the harness. The Model Context
//! Protocol lets any program offer tools: the agent starts it as a child
//! process, speaks JSON-RPC with it over its standard input and output,
//! asks which tools it has (`tools/list`) and calls them (`tools/call`).
//! A server that runs elsewhere is reached over the protocol's other
//! transport, Streamable HTTP, at a URL ([`http`]); everything after the
//! connection is the same for both.
//! This lesson speaks it through rmcp, the protocol's official Rust SDK:
//! the handshake, the message framing, the pairing of replies with
//! requests and the pagination are the SDK's; what to do with the tools is
//! ours.
//!
//! ```text
//!  .mcp.json ──► connect_mcp {name} ──► spawn ──► initialize ──► tools/list (all pages)
//!                                                                  │
//!  the model calls mcp__docs__search ◄── tool pool (at the end) ◄──┘
//!        │
//!        └─► the registry's handler ──► tools/call ──► result or isError ──► tool_result
//! ```
//!
//! * [`config`]: `.mcp.json`, loaded defensively; `${VAR}`s filled in.
//! * [`http`]: rmcp's Streamable HTTP client on the workspace's reqwest.
//! * [`error`]: why an entry is refused or a server cannot be connected.
//! * [`names`]: `mcp__<server>__<tool>`, normalised, at most 64 characters,
//!   collisions refused.
//! * [`client`]: our side of a connection — roots, progress, logs,
//!   `list_changed`.
//! * [`content`]: what a result's content becomes for the model.
//! * [`tools`]: `connect_mcp`, `list_mcp`, and the sync of the connected
//!   servers' tools into the dispatch map.
//! * this file: the [`McpHub`], which owns the connections.
//!
//! Only the lead gets MCP tools: subagents and teammates build their own
//! tool maps from the base tools, as they did before this lesson.

pub mod client;
pub mod config;
pub mod content;
pub mod error;
pub mod http;
pub mod names;
pub mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use shared::hooks::ToolOutput;
use shared::notice::Notices;
use shared::protocol::ToolSpec;
use shared::sync::LockExt;
use shared::text::plural;

use client::Client;
pub use config::{CONFIG_FILE, LOG_DIR, ServerConfig, Transport};
use error::ConnectError;
use names::Naming;
pub use tools::McpSync;

/// The tag of this mechanism's notices.
pub const MCP_TAG: &str = "mcp";

// ANCHOR: options
/// What a caller may choose about MCP.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// How long a server may take to start and answer the handshake and
    /// the first `tools/list`.
    pub startup_timeout: Duration,
    /// How long one `tools/call` may take before it is cancelled.
    pub call_timeout: Duration,
    /// Servers configured besides `.mcp.json`'s (which wins on a name
    /// both have): lesson 19 passes those of its settings file.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Where the `${VAR}`s of an HTTP server's URL and headers are looked
    /// up: `main` hands down the environment; by default, nowhere.
    pub vars: VarLookup,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(120),
            servers: BTreeMap::new(),
            vars: VarLookup::default(),
        }
    }
}
// ANCHOR_END: options

/// A variable's value by its name, or `None`.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// A lookup of variables by name, handed down from the edge of the program
/// so that the library never reads the environment itself.
#[derive(Clone)]
pub struct VarLookup(Arc<Lookup>);

impl VarLookup {
    pub fn new(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(lookup))
    }

    /// The value of `name`, if it has one.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }
}

impl Default for VarLookup {
    /// A lookup that finds nothing.
    fn default() -> Self {
        Self::new(|_| None)
    }
}

impl std::fmt::Debug for VarLookup {
    // The values may be secrets: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VarLookup")
    }
}

/// Overrides the start-up timeout, in milliseconds (Claude Code's name).
pub const ENV_STARTUP_TIMEOUT_MS: &str = "MCP_TIMEOUT";

/// Overrides the per-call timeout, in milliseconds (Claude Code's name).
pub const ENV_CALL_TIMEOUT_MS: &str = "MCP_TOOL_TIMEOUT";

impl McpOptions {
    /// The defaults, with the timeouts `lookup` overrides, and `lookup`
    /// for the `${VAR}`s of `.mcp.json` (`main` passes the environment).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Self, shared::settings::InvalidSetting> {
        let mut options = Self::default();
        if let Some(ms) = shared::settings::number(&lookup, ENV_STARTUP_TIMEOUT_MS, 1u64)? {
            options.startup_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = shared::settings::number(&lookup, ENV_CALL_TIMEOUT_MS, 1u64)? {
            options.call_timeout = Duration::from_millis(ms);
        }
        options.vars = VarLookup::new(lookup);
        Ok(options)
    }
}

// ANCHOR: risk
/// What a server claims about a tool, in its annotations. Claims, not
/// facts: the server could be wrong or lying. The gate trusts a claim only
/// in the safe direction — see [`McpTool::approval_reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Risk {
    /// `readOnlyHint: true`: the tool does not change its environment.
    ReadOnly,
    /// `destructiveHint: true` (or absent, which the protocol says means
    /// true) on a tool that is not read-only.
    Destructive,
    /// Not read-only, and `destructiveHint: false`: it only adds.
    Additive,
}

impl Risk {
    /// The risk the annotations of `tool` claim.
    pub fn of(tool: &Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        if annotations.and_then(|a| a.read_only_hint) == Some(true) {
            Self::ReadOnly
        } else if annotations.and_then(|a| a.destructive_hint) == Some(false) {
            Self::Additive
        } else {
            Self::Destructive
        }
    }
}
// ANCHOR_END: risk

/// One MCP tool in the tool pool.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The name the model calls it by: `mcp__<server>__<tool>`.
    pub name: String,
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// What the model is told.
    pub spec: ToolSpec,
    pub risk: Risk,
}

impl McpTool {
    fn new(name: String, server: &str, tool: &Tool) -> Self {
        let risk = Risk::of(tool);
        let mut description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("A tool of an MCP server.")
            .trim()
            .to_string();
        // ANCHOR: labels
        // The server's claim, where the model can see it.
        match risk {
            Risk::ReadOnly => description.push_str(" (readOnly)"),
            Risk::Destructive => description.push_str(" (destructive)"),
            Risk::Additive => {}
        }
        // ANCHOR_END: labels
        Self {
            spec: ToolSpec::new(
                name.clone(),
                format!("[MCP server `{server}`] {description}"),
                Value::Object((*tool.input_schema).clone()),
            ),
            name,
            server: server.to_string(),
            tool: tool.name.to_string(),
            risk,
        }
    }

    // ANCHOR: approval
    /// Why calling this tool needs the user's approval, if it does. The rule:
    /// a tool runs without asking only when its server claims it is
    /// read-only; every other MCP tool asks. Believing "read-only" can only
    /// skip a question for a server the user configured; believing
    /// "harmless" of an unmarked tool could let it delete files unasked.
    pub fn approval_reason(&self) -> Option<&'static str> {
        match self.risk {
            Risk::ReadOnly => None,
            Risk::Destructive => Some("MCP tool its server marks destructive"),
            Risk::Additive => Some("MCP tool its server does not mark read-only"),
        }
    }
    // ANCHOR_END: approval
}

/// The connections of this agent to MCP servers. Clones share them.
#[derive(Clone)]
pub struct McpHub {
    inner: Arc<Inner>,
}

/// What the hub's clones share.
pub struct Inner {
    root: PathBuf,
    root_uri: String,
    notices: Notices,
    options: McpOptions,
    next_connection: AtomicU64,
    state: Mutex<State>,
    /// How many `list_changed` re-listings are under way, and a wake-up
    /// for when one ends.
    relisting: AtomicUsize,
    relisted: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    /// The configured servers, from the options and `.mcp.json`.
    configs: BTreeMap<String, ServerConfig>,
    /// The servers connected now.
    connected: BTreeMap<String, Connection>,
    /// Servers that were connected and are not any more, and why.
    lost: BTreeMap<String, String>,
    /// Bumped whenever the set of MCP tools changes, so the dispatch map
    /// is synced only then (and the request prefix stays the same
    /// otherwise).
    generation: u64,
}

/// One running server.
struct Connection {
    id: u64,
    service: RunningService<RoleClient, Client>,
    pid: Option<u32>,
    /// How it is spoken to.
    transport: Transport,
    /// `name version`, from the handshake.
    server_info: String,
    tools: Vec<McpTool>,
    /// Tools not offered, and why.
    refused: Vec<String>,
}

impl McpHub {
    /// A hub for the workspace at `root`, with the servers of `options`
    /// and of `root/.mcp.json`, reporting to `notices`. Nothing starts
    /// until `connect_mcp`.
    pub fn new(root: &Path, notices: Notices, options: McpOptions) -> Self {
        let hub = Self {
            inner: Arc::new(Inner {
                root: root.to_path_buf(),
                root_uri: client::file_uri(root),
                notices,
                options,
                next_connection: AtomicU64::new(1),
                state: Mutex::new(State::default()),
                relisting: AtomicUsize::new(0),
                relisted: tokio::sync::Notify::new(),
            }),
        };
        hub.reload_config();
        hub
    }

    /// Reads `.mcp.json` again, so a server added to it while the agent
    /// runs can be connected without a restart.
    pub fn reload_config(&self) {
        let mut configs = self.inner.options.servers.clone();
        configs.extend(config::load(&self.inner.root, &self.inner.notices));
        self.inner.lock().configs = configs;
    }

    /// The names of the configured servers.
    pub fn configured(&self) -> Vec<String> {
        self.inner.lock().configs.keys().cloned().collect()
    }

    // ANCHOR: settle
    /// Waits (at most the start-up timeout) for the re-listings that
    /// `list_changed` notifications started: a server sends the
    /// notification just before its reply to the call that changed its
    /// tools, and the model's next call should see the new list.
    pub async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + self.inner.options.startup_timeout;
        while self.inner.relisting.load(Ordering::SeqCst) > 0 {
            let ended = self.inner.relisted.notified();
            if self.inner.relisting.load(Ordering::SeqCst) == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                break;
            }
        }
    }
    // ANCHOR_END: settle

    /// Changes whenever the set of MCP tools changes.
    pub fn generation(&self) -> u64 {
        self.inner.lock().generation
    }

    /// Every MCP tool offered now, by server name, then in the server's
    /// order.
    pub fn tools(&self) -> Vec<McpTool> {
        self.inner
            .lock()
            .connected
            .values()
            .flat_map(|connection| connection.tools.iter().cloned())
            .collect()
    }

    /// The process id of server `name`, while it is connected.
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.inner.lock().connected.get(name)?.pid
    }

    /// Why calling `tool` needs approval, if it is an MCP tool that does.
    pub fn approval_reason(&self, tool: &str) -> Option<&'static str> {
        let state = self.inner.lock();
        state
            .connected
            .values()
            .flat_map(|connection| &connection.tools)
            .find(|offered| offered.name == tool)
            .and_then(McpTool::approval_reason)
    }

    // ANCHOR: connect
    /// Starts server `name`, runs the handshake, lists its tools and adds
    /// them to the pool. Every failure is an error result saying what
    /// happened; none of them stops the agent.
    pub async fn connect(&self, name: &str) -> ToolOutput {
        self.reload_config();
        let config = {
            let mut state = self.inner.lock();
            if let Some(connection) = state.connected.get(name) {
                if !connection.service.peer().is_transport_closed() {
                    return ToolOutput::ok(format!(
                        "MCP server `{name}` is already connected, with {}.",
                        tool_list(&connection.tools)
                    ));
                }
                // It died since; drop it and connect again.
                state.disconnect(name, "its connection closed");
            }
            match state.configs.get(name) {
                Some(config) => config.clone(),
                None => return ToolOutput::error(state.unknown_server(name)),
            }
        };
        match self.start(name, &config).await {
            Ok(connection) => {
                let answer = connection.describe(name);
                self.inner.notices.emit(
                    MCP_TAG,
                    format!(
                        "connected {name} ({}): {}",
                        connection.server_info,
                        plural(connection.tools.len(), "tool", "tools")
                    ),
                );
                let mut state = self.inner.lock();
                state.lost.remove(name);
                state.connected.insert(name.to_string(), connection);
                state.generation += 1;
                ToolOutput::ok(answer)
            }
            Err(reason) => {
                self.inner
                    .notices
                    .emit(MCP_TAG, format!("{name} failed to connect: {reason}"));
                ToolOutput::error(format!(
                    "MCP server `{name}` could not be connected: {reason}"
                ))
            }
        }
    }

    /// Connects to the server over its transport.
    async fn start(&self, name: &str, config: &ServerConfig) -> Result<Connection, ConnectError> {
        match config.transport() {
            Transport::Stdio => self.start_stdio(name, config).await,
            Transport::Http => self.start_http(name, config).await,
        }
    }

    /// Spawns the server with its standard error in its log file, and
    /// connects: handshake, then every page of `tools/list`, both within
    /// the start-up timeout.
    async fn start_stdio(
        &self,
        name: &str,
        config: &ServerConfig,
    ) -> Result<Connection, ConnectError> {
        let log = config::log_path(&self.inner.root, name);
        let stderr = open_log(&log).map_err(|error| ConnectError::Log {
            path: log.clone(),
            error,
        })?;
        let mut command = tokio::process::Command::new(self.program(&config.command));
        command
            .args(&config.args)
            .envs(&config.env)
            .current_dir(&self.inner.root)
            // If the hub is dropped without `stop_all`, the child still dies.
            .kill_on_drop(true);
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(stderr)
            .spawn()
            .map_err(|error| ConnectError::Spawn {
                command: config.command.clone(),
                error,
            })?;
        let pid = transport.id();
        let endpoint = std::iter::once(config.command.as_str())
            .chain(config.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let mut connection = self
            .handshake(name, transport, Transport::Stdio, endpoint)
            .await
            .map_err(|reason| with_log_tail(reason, &log))?;
        connection.pid = pid;
        Ok(connection)
    }

    // ANCHOR: start_http
    /// Connects to the server at the configured URL over Streamable HTTP,
    /// its URL and headers' `${VAR}`s filled in first. Nothing is spawned:
    /// the server runs on its own, and outlives the connection.
    async fn start_http(
        &self,
        name: &str,
        config: &ServerConfig,
    ) -> Result<Connection, ConnectError> {
        let vars = &self.inner.options.vars;
        let lookup = |var: &str| vars.get(var);
        let written = config.url.clone().unwrap_or_default();
        let url = config::expand(&written, &lookup).map_err(ConnectError::Url)?;
        let mut headers = BTreeMap::new();
        for (header, value) in &config.headers {
            let value = config::expand(value, &lookup).map_err(|error| ConnectError::Header {
                header: header.clone(),
                error,
            })?;
            headers.insert(header.clone(), value);
        }
        let transport = http::transport(name, &url, &headers, self.inner.notices.clone())?;
        self.handshake(name, transport, Transport::Http, written)
            .await
    }
    // ANCHOR_END: start_http

    /// The handshake and every page of `tools/list` over `transport`, both
    /// within the start-up timeout.
    async fn handshake<T, E, A>(
        &self,
        name: &str,
        transport: T,
        kind: Transport,
        endpoint: String,
    ) -> Result<Connection, ConnectError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let id = self.inner.next_connection.fetch_add(1, Ordering::Relaxed);
        let client = Client {
            server: name.to_string(),
            connection: id,
            root_uri: self.inner.root_uri.clone(),
            notices: self.inner.notices.clone(),
            hub: Arc::downgrade(&self.inner),
        };
        let timeout = self.inner.options.startup_timeout;
        let started = tokio::time::timeout(timeout, async {
            let service = client
                .serve(transport)
                .await
                .map_err(|error| ConnectError::Handshake(error.to_string()))?;
            let tools = service
                .peer()
                .list_all_tools()
                .await
                .map_err(|error| ConnectError::ListTools(error.to_string()))?;
            Ok::<_, ConnectError>((service, tools))
        })
        .await;
        // A failed or timed-out start drops the transport, which kills the
        // child (stdio) or ends the session (HTTP).
        let (service, tools) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(reason)) => return Err(reason),
            Err(_) => {
                return Err(match kind {
                    Transport::Stdio => ConnectError::StdioTimeout(timeout),
                    Transport::Http => ConnectError::HttpTimeout { timeout, endpoint },
                });
            }
        };
        let server_info = service
            .peer()
            .peer_info()
            .and_then(|info| info.server_info.clone())
            .map(|server| format!("{} {}", server.name, server.version))
            .unwrap_or_else(|| "unknown server".to_string());
        let mut connection = Connection {
            id,
            service,
            pid: None,
            transport: kind,
            server_info,
            tools: Vec::new(),
            refused: Vec::new(),
        };
        let taken = self.inner.lock().names_taken_except(name);
        connection.set_tools(name, &tools, &taken);
        Ok(connection)
    }
    // ANCHOR_END: connect

    /// `command` as the program to run: a relative path (one with a `/`)
    /// starts at the workspace root; a bare name is looked up on `PATH`.
    fn program(&self, command: &str) -> PathBuf {
        let path = Path::new(command);
        if path.is_relative() && command.contains('/') {
            self.inner.root.join(path)
        } else {
            path.to_path_buf()
        }
    }

    // ANCHOR: call
    /// Calls `tool` of server `server` with the model's `input`. A server's
    /// failure — a JSON-RPC error, `isError: true`, no answer in time, a
    /// server that died — is an error result with the server's message; a
    /// server that died is marked disconnected, its tools leave the pool,
    /// and `connect_mcp` can start it again.
    pub async fn call(&self, server: &str, tool: &str, input: Value) -> ToolOutput {
        let arguments = match input {
            Value::Object(arguments) => Some(arguments),
            Value::Null => None,
            other => {
                return ToolOutput::error(format!(
                    "The input of an MCP tool must be a JSON object, not {other}."
                ));
            }
        };
        let Some((peer, id, transport)) = self.peer(server) else {
            return ToolOutput::error(self.inner.lock().not_connected(server));
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let timeout = self.inner.options.call_timeout;
        // Dropping the request on a timeout sends `notifications/cancelled`.
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => {
                let text = content::render(&result);
                if result.is_error == Some(true) {
                    ToolOutput::error(format!("MCP server `{server}` reported an error: {text}"))
                } else {
                    ToolOutput::ok(text)
                }
            }
            Ok(Err(ServiceError::McpError(error))) => ToolOutput::error(format!(
                "MCP server `{server}` refused the call: {} (JSON-RPC error {})",
                error.message, error.code.0
            )),
            // Over HTTP a request that could not be sent, or whose answer
            // stream broke, leaves the connection: the server may be back
            // for the next call (and if it lost our session, rmcp starts a
            // new one). Only rmcp's transport ending is the end.
            Ok(Err(error)) if transport == Transport::Http && !peer.is_transport_closed() => {
                let why = match &error {
                    ServiceError::TransportSend(error) => error_chain(&*error.error),
                    other => error_chain(other),
                };
                ToolOutput::error(format!(
                    "MCP server `{server}` could not be reached during a call to `{tool}`: {why}. \
                     The connection is kept, and the next call tries again."
                ))
            }
            Ok(Err(error)) if peer.is_transport_closed() || is_closed(&error) => {
                let reason = format!("the server exited during a call to `{tool}` ({error})");
                self.lost(server, id, &reason).await;
                ToolOutput::error(format!(
                    "MCP server `{server}` is gone: {reason}. Its tools were removed; \
                     connect_mcp with name `{server}` starts it again."
                ))
            }
            Ok(Err(error)) => ToolOutput::error(format!("MCP call to `{server}` failed: {error}")),
            Err(_) => ToolOutput::error(format!(
                "MCP server `{server}` did not answer `{tool}` within {}; the call was \
                 cancelled. The server is still connected.",
                seconds(timeout)
            )),
        }
    }
    // ANCHOR_END: call

    /// The peer of a connected server, and which connection it is.
    fn peer(&self, server: &str) -> Option<(Peer<RoleClient>, u64, Transport)> {
        let state = self.inner.lock();
        let connection = state.connected.get(server)?;
        Some((
            connection.service.peer().clone(),
            connection.id,
            connection.transport,
        ))
    }

    /// Marks connection `id` of `server` lost, and stops what is left of it.
    async fn lost(&self, server: &str, id: u64, reason: &str) {
        let taken = {
            let mut state = self.inner.lock();
            if state.connected.get(server).map(|c| c.id) != Some(id) {
                return;
            }
            state.disconnect(server, reason)
        };
        self.inner
            .notices
            .emit(MCP_TAG, format!("{server} disconnected: {reason}"));
        if let Some(connection) = taken {
            stop(server, connection).await;
        }
    }

    /// The answer of `list_mcp`: every configured server and its state.
    pub fn status(&self) -> String {
        self.reload_config();
        let state = self.inner.lock();
        if state.configs.is_empty() {
            return format!("No MCP servers are configured (add them to {CONFIG_FILE}).");
        }
        let lines: Vec<String> = state
            .configs
            .keys()
            .map(|name| {
                // The transport, and where the server is: as configured.
                let via = match state.configs.get(name) {
                    Some(config) if config.transport() == Transport::Http => {
                        format!("http {}", config.url.as_deref().unwrap_or_default())
                    }
                    _ => Transport::Stdio.name().to_string(),
                };
                if let Some(connection) = state.connected.get(name) {
                    format!(
                        "{name} [{via}]: connected ({}), {}",
                        connection.server_info,
                        tool_list(&connection.tools)
                    )
                } else if let Some(reason) = state.lost.get(name) {
                    format!("{name} [{via}]: disconnected ({reason}); connect_mcp starts it again")
                } else {
                    format!("{name} [{via}]: not connected")
                }
            })
            .collect();
        lines.join("\n")
    }

    /// The system prompt's section about MCP: which servers can be
    /// connected and which are. It changes only when a connection does.
    pub fn prompt_section(&self) -> String {
        let state = self.inner.lock();
        if state.configs.is_empty() && state.connected.is_empty() {
            return String::new();
        }
        let mut lines = vec!["MCP servers (external tools; connect with connect_mcp):".to_string()];
        for name in state.configs.keys() {
            let line = match state.connected.get(name) {
                Some(connection) => format!(
                    "- {name}: connected, {} named mcp__{}__*",
                    plural(connection.tools.len(), "tool", "tools"),
                    names::normalize(name)
                ),
                None => format!("- {name}: not connected"),
            };
            lines.push(line);
        }
        lines.join("\n")
    }

    // ANCHOR: stop_all
    /// Stops every server: closes its input, waits for it to exit, and
    /// kills it if it does not. Called when the session ends, so no server
    /// outlives the agent.
    pub async fn stop_all(&self) {
        let connections: Vec<(String, Connection)> = {
            let mut state = self.inner.lock();
            if !state.connected.is_empty() {
                state.generation += 1;
            }
            std::mem::take(&mut state.connected).into_iter().collect()
        };
        for (name, connection) in connections {
            stop(&name, connection).await;
        }
    }
    // ANCHOR_END: stop_all
}

impl Inner {
    /// A re-listing begins.
    pub(super) fn relist_started(&self) {
        self.relisting.fetch_add(1, Ordering::SeqCst);
    }

    /// A re-listing ended, whatever its outcome.
    pub(super) fn relist_ended(&self) {
        self.relisting.fetch_sub(1, Ordering::SeqCst);
        self.relisted.notify_waiters();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }

    /// After `list_changed`: the tools of connection `connection` of
    /// `server` are now `tools`.
    pub(super) fn replace_tools(&self, server: &str, connection: u64, tools: Vec<Tool>) {
        let mut state = self.lock();
        let taken = state.names_taken_except(server);
        let Some(current) = state.connected.get_mut(server) else {
            return;
        };
        if current.id != connection {
            return;
        }
        let before: Vec<String> = current.tools.iter().map(|t| t.name.clone()).collect();
        current.set_tools(server, &tools, &taken);
        let after: Vec<String> = current.tools.iter().map(|t| t.name.clone()).collect();
        let added: Vec<&str> = after
            .iter()
            .filter(|n| !before.contains(n))
            .map(String::as_str)
            .collect();
        let removed: Vec<&str> = before
            .iter()
            .filter(|n| !after.contains(n))
            .map(String::as_str)
            .collect();
        let mut change = format!(
            "{server}: tool list changed, now {}",
            plural(after.len(), "tool", "tools")
        );
        if !added.is_empty() {
            change.push_str(&format!("; added {}", added.join(", ")));
        }
        if !removed.is_empty() {
            change.push_str(&format!("; removed {}", removed.join(", ")));
        }
        for refusal in &current.refused {
            change.push_str(&format!("; {refusal}"));
        }
        state.generation += 1;
        drop(state);
        self.notices.emit(MCP_TAG, change);
    }
}

impl State {
    /// The MCP tool names in use by servers other than `server`, with who
    /// has them.
    fn names_taken_except(&self, server: &str) -> Vec<(String, String)> {
        self.connected
            .iter()
            .filter(|(name, _)| name.as_str() != server)
            .flat_map(|(name, connection)| {
                connection
                    .tools
                    .iter()
                    .map(move |t| (t.name.clone(), format!("`{}` of server `{name}`", t.tool)))
            })
            .collect()
    }

    /// Takes `server` out of the connected ones, remembering why.
    fn disconnect(&mut self, server: &str, reason: &str) -> Option<Connection> {
        let connection = self.connected.remove(server)?;
        self.lost.insert(server.to_string(), reason.to_string());
        self.generation += 1;
        Some(connection)
    }

    fn unknown_server(&self, name: &str) -> String {
        if self.configs.is_empty() {
            format!(
                "Unknown MCP server `{name}`: no servers are configured. Add one to \
                 {CONFIG_FILE} at the workspace root: \
                 {{\"mcpServers\": {{\"{name}\": {{\"command\": \"...\", \"args\": []}}}}}}"
            )
        } else {
            let known: Vec<&str> = self.configs.keys().map(String::as_str).collect();
            format!(
                "Unknown MCP server `{name}`. Configured servers: {}.",
                known.join(", ")
            )
        }
    }

    fn not_connected(&self, server: &str) -> String {
        match self.lost.get(server) {
            Some(reason) => format!(
                "MCP server `{server}` is disconnected ({reason}); connect_mcp with name \
                 `{server}` starts it again."
            ),
            None => format!(
                "MCP server `{server}` is not connected; connect_mcp with name `{server}` \
                 connects it."
            ),
        }
    }
}

impl Connection {
    /// Names the server's tools, refusing those whose names are taken.
    fn set_tools(&mut self, server: &str, tools: &[Tool], taken: &[(String, String)]) {
        let namings = names::assign(server, tools.iter().map(|t| t.name.as_ref()), taken);
        self.tools.clear();
        self.refused.clear();
        for (tool, naming) in tools.iter().zip(namings) {
            match naming {
                Naming::Offered(name) => self.tools.push(McpTool::new(name, server, tool)),
                Naming::Refused { name, taken_by } => self.refused.push(format!(
                    "`{}` not added: its name {name} is already {taken_by}'s",
                    tool.name
                )),
            }
        }
    }

    /// The answer of a successful `connect_mcp`.
    fn describe(&self, name: &str) -> String {
        let mut answer = format!(
            "Connected to MCP server `{name}` ({}). {}.",
            self.server_info,
            capitalise(&tool_list(&self.tools))
        );
        for refusal in &self.refused {
            answer.push_str(&format!("\nRefused: {refusal}."));
        }
        answer
    }
}

/// Closes the connection and waits for the server to exit (rmcp closes its
/// input, waits, then sends SIGTERM, then kills it).
async fn stop(name: &str, connection: Connection) {
    if let Err(error) = connection.service.cancel().await {
        tracing::warn!("stopping MCP server {name}: {error}");
    }
}

/// `3 tools: a (readOnly), b, c`.
fn tool_list(tools: &[McpTool]) -> String {
    let names: Vec<String> = tools
        .iter()
        .map(|tool| match tool.risk {
            Risk::ReadOnly => format!("{} (readOnly)", tool.name),
            Risk::Destructive => format!("{} (destructive)", tool.name),
            Risk::Additive => tool.name.clone(),
        })
        .collect();
    if names.is_empty() {
        "no tools".to_string()
    } else {
        format!(
            "{}: {}",
            plural(tools.len(), "tool", "tools"),
            names.join(", ")
        )
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Whether `error` says the connection is gone.
fn is_closed(error: &ServiceError) -> bool {
    matches!(
        error,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

/// `error` and the errors it wraps, each once: `a: b: c`.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let text = error.to_string();
        // Many errors repeat their source's text in their own.
        if !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        next = error.source();
    }
    parts.join(": ")
}

/// `1.5 s`.
fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// The server's log file, emptied: it holds what the server wrote since
/// it was last started. Its directory is made if need be.
fn open_log(path: &Path) -> std::io::Result<Stdio> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::File::create(path)?;
    Ok(Stdio::from(file))
}

/// `reason`, and the last lines the server wrote to its log, which often
/// say why it did not start.
fn with_log_tail(reason: ConnectError, log: &Path) -> ConnectError {
    const LINES: usize = 5;
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .rev()
        .take(LINES)
        .collect();
    if tail.is_empty() {
        return reason;
    }
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    ConnectError::WithLogTail {
        reason: Box::new(reason),
        log: log.to_path_buf(),
        tail: tail.join("\n"),
    }
}
