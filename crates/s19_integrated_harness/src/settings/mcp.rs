//! The settings file's MCP servers, in the shape of a `.mcp.json` entry.
//!
//! ```toml
//! [mcp_servers.docs]
//! command = "cargo"
//! args = ["run", "-q", "-p", "mcp_docs_server"]
//! env = { DOCS_DIR = "docs" }
//! ```
//!
//! is `{"mcpServers": {"docs": {"command": "cargo", "args": [...], "env":
//! {...}}}}` in `.mcp.json`. The name becomes the middle of the server's
//! tool names, `mcp__docs__search`, so it may not contain `__`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How to start one MCP server over stdio.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// The program to run.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Why a server's name cannot be used, if it cannot.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a server needs a name".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
    {
        return Err(format!(
            "{name:?} is not a server name: it has {bad:?} (use letters, digits, _ and -)"
        ));
    }
    if name.contains("__") {
        return Err(format!(
            "{name:?} is not a server name: `__` separates the server from the tool in \
             mcp__<server>__<tool>"
        ));
    }
    Ok(())
}

impl McpServer {
    /// Why the entry cannot start a server, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.command.trim().is_empty() {
            return Err("command is empty".into());
        }
        Ok(())
    }

    /// The command line, for `/status`.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}
