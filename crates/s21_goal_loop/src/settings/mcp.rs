//! The settings file's MCP servers: lesson 18's [`ServerConfig`], the
//! shape of one `.mcp.json` entry.
//!
//! ```toml
//! [mcp_servers.docs]
//! command = "cargo"
//! args = ["run", "-q", "-p", "mcp_example_server"]
//! env = { DOCS_DIR = "docs" }
//! ```
//!
//! is `{"mcpServers": {"docs": {"command": "cargo", "args": [...], "env":
//! {...}}}}` in `.mcp.json`. They are handed to lesson 18's hub with the
//! workspace's `.mcp.json`, which wins on a name both have. The name
//! becomes the middle of the server's tool names, `mcp__docs__search`,
//! which the permission rules match; so here, stricter than `.mcp.json`,
//! it must be a name the tool names keep as it is.

pub use crate::mcp::ServerConfig;

/// Why a server's name cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerNameError {
    #[error("a server needs a name")]
    Empty,
    #[error("{name:?} is not a server name: it has {bad:?} (use letters, digits, _ and -)")]
    BadCharacter { name: String, bad: char },
    #[error(
        "{0:?} is not a server name: `__` separates the server from the tool in \
         mcp__<server>__<tool>"
    )]
    DoubleUnderscore(String),
}

/// Why a server's name cannot be used, if it cannot.
pub fn check_name(name: &str) -> Result<(), ServerNameError> {
    if name.is_empty() {
        return Err(ServerNameError::Empty);
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
    {
        return Err(ServerNameError::BadCharacter {
            name: name.to_string(),
            bad,
        });
    }
    if name.contains("__") {
        return Err(ServerNameError::DoubleUnderscore(name.to_string()));
    }
    Ok(())
}
