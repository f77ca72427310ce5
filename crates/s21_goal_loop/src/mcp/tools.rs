//! The lead's MCP tools, and the MCP servers' tools in the dispatch map.
//!
//! `connect_mcp` and `list_mcp` are ordinary tools, registered once. The
//! servers' own tools are entries in the same [`ToolRegistry`] as every
//! other tool: [`McpSync::sync`] adds and removes them whenever the set of
//! MCP tools changed (a connection, a `list_changed`, a server that died),
//! before the next model call. So there is one dispatch path, and the
//! permission gate and the hooks see an MCP call like any other.
//!
//! They are registered after every built-in tool, so they come last in
//! the request: the tools before them, the prefix the provider caches,
//! stay the same bytes when a server connects.

use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;

use super::McpHub;
use crate::dispatch::{ToolContext, ToolRegistry};

/// The tool that connects a server.
pub const CONNECT_MCP: &str = "connect_mcp";

/// The tool that lists the servers.
pub const LIST_MCP: &str = "list_mcp";

// ANCHOR: specs
fn connect_spec() -> ToolSpec {
    ToolSpec::new(
        CONNECT_MCP,
        "Connect to an MCP server configured in .mcp.json and add its tools, named \
         mcp__<server>__<tool>. Call list_mcp to see the configured servers.",
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The server's name in .mcp.json"}
            },
            "required": ["name"]
        }),
    )
}

fn list_spec() -> ToolSpec {
    ToolSpec::new(
        LIST_MCP,
        "List the MCP servers configured in .mcp.json: connected or not, and their tools.",
        json!({"type": "object", "properties": {}}),
    )
}
// ANCHOR_END: specs

// ANCHOR: register
/// Registers `connect_mcp` and `list_mcp`, working on `hub`.
pub fn register(tools: &mut ToolRegistry, hub: &McpHub) {
    let connect = hub.clone();
    tools.register(connect_spec(), move |input, _cx: ToolContext| {
        let hub = connect.clone();
        async move {
            match input.get("name").and_then(Value::as_str) {
                Some(name) if !name.trim().is_empty() => hub.connect(name.trim()).await,
                _ => ToolOutput::error(format!(
                    "connect_mcp needs `name`, the server's name in .mcp.json. Configured: {}.",
                    or_none(&hub.configured())
                )),
            }
        }
    });
    let list = hub.clone();
    tools.register(list_spec(), move |_input, _cx: ToolContext| {
        let hub = list.clone();
        async move { ToolOutput::ok(hub.status()) }
    });
}
// ANCHOR_END: register

// ANCHOR: sync
/// Keeps the dispatch map in step with the connected servers' tools.
#[derive(Debug, Default)]
pub struct McpSync {
    /// The hub's generation the map was last synced with.
    generation: u64,
    /// The MCP tools registered then.
    registered: Vec<String>,
}

impl McpSync {
    /// Adds and removes MCP tools in `tools` if the hub's tools changed
    /// since the last sync; returns whether they did. Nothing else in the
    /// map moves, and the MCP tools come after all others.
    pub fn sync(&mut self, tools: &mut ToolRegistry, hub: &McpHub) -> bool {
        let generation = hub.generation();
        if generation == self.generation {
            return false;
        }
        for name in self.registered.drain(..) {
            tools.unregister(&name);
        }
        for tool in hub.tools() {
            let call_hub = hub.clone();
            let (server, name) = (tool.server.clone(), tool.tool.clone());
            tools.register(tool.spec.clone(), move |input, _cx: ToolContext| {
                let (hub, server, name) = (call_hub.clone(), server.clone(), name.clone());
                async move { hub.call(&server, &name, input).await }
            });
            self.registered.push(tool.name);
        }
        self.generation = generation;
        true
    }
}
// ANCHOR_END: sync

fn or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
