//! `.mcp.json`: which servers the workspace can connect to.
//!
//! The file has the shape other MCP clients read:
//!
//! ```json
//! {"mcpServers": {"docs": {"command": "mcp_example_server", "args": [], "env": {"LOG": "1"}}}}
//! ```
//!
//! It is loaded defensively, entry by entry: a file that is not JSON, or an
//! entry without a `command`, is reported (a notice naming the file, the key
//! and the reason) and skipped; the other entries still load.
//!
//! An entry is read strictly: a field this lesson does not know (a
//! misspelt `agrs`, or another client's `cwd` or `url`) is refused, with
//! the same notice, rather than ignored, since a server started without
//! the arguments the user wrote would misbehave with no word why. So the
//! file serves other clients only as far as its entries use these fields.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use shared::notice::Notices;

use super::MCP_TAG;

/// The file, at the workspace root.
pub const CONFIG_FILE: &str = ".mcp.json";

// ANCHOR: server_config
/// How to start one server: a program, its arguments, and variables added
/// to its environment. Public and `Deserialize`, so other configuration
/// files (lesson 19's settings) can name servers the same way.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program, found on `PATH` unless it is a path; a relative path
    /// starts at the workspace root.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `"stdio"`, the only transport this lesson speaks; other clients
    /// write it out, so it is accepted.
    #[serde(default, rename = "type")]
    pub transport: Option<String>,
}
// ANCHOR_END: server_config

impl ServerConfig {
    /// A server started as `command args…`.
    pub fn new(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            transport: None,
        }
    }

    /// Checks what serde cannot: a command to run, and a transport this
    /// lesson speaks.
    pub fn check(self) -> Result<Self, String> {
        if self.command.trim().is_empty() {
            return Err("`command` is empty".to_string());
        }
        match self.transport.as_deref() {
            None | Some("stdio") => Ok(self),
            Some(other) => Err(format!(
                "transport `{other}` is not supported here; only stdio servers are"
            )),
        }
    }
}

// ANCHOR: load
/// The servers `.mcp.json` in `root` configures, by name. No file means no
/// servers; every problem is a notice, and the entries without one load.
pub fn load(root: &Path, notices: &Notices) -> BTreeMap<String, ServerConfig> {
    let path = root.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
        Err(error) => {
            notices.emit(MCP_TAG, format!("{}: cannot read: {error}", path.display()));
            return BTreeMap::new();
        }
    };
    parse(&path, &text, notices)
}

/// The servers in `text`, the contents of `path`.
pub fn parse(path: &Path, text: &str, notices: &Notices) -> BTreeMap<String, ServerConfig> {
    let report = |key: &str, reason: String| {
        notices.emit(
            MCP_TAG,
            format!("{}: {key}: {reason}; skipped", path.display()),
        );
    };
    let document: Value = match serde_json::from_str(text) {
        Ok(document) => document,
        Err(error) => {
            report("(file)", format!("not valid JSON ({error})"));
            return BTreeMap::new();
        }
    };
    let Some(entries) = document.get("mcpServers") else {
        report("mcpServers", "missing".to_string());
        return BTreeMap::new();
    };
    let Some(entries) = entries.as_object() else {
        report("mcpServers", "not an object of servers by name".to_string());
        return BTreeMap::new();
    };
    let mut servers = BTreeMap::new();
    for (name, entry) in entries {
        let key = format!("mcpServers.{name}");
        if name.trim().is_empty() {
            report(&key, "a server needs a name".to_string());
            continue;
        }
        match ServerConfig::deserialize(entry)
            .map_err(|error| error.to_string())
            .and_then(ServerConfig::check)
        {
            Ok(config) => {
                servers.insert(name.clone(), config);
            }
            Err(reason) => report(&key, reason),
        }
    }
    servers
}
// ANCHOR_END: load

/// Where a server's standard error goes: one log file per server, so its
/// messages never reach the terminal the user types in.
pub fn log_path(root: &Path, server: &str) -> PathBuf {
    root.join(LOG_DIR)
        .join(format!("{}.log", super::names::normalize(server)))
}

/// The directory of the servers' logs, at the workspace root.
pub const LOG_DIR: &str = ".mcp_logs";
