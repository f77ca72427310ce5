//! `.mcp.json`: which servers the workspace can connect to.
//!
//! The file has the shape other MCP clients read:
//!
//! ```json
//! {"mcpServers": {
//!   "docs": {"command": "mcp_example_server", "args": [], "env": {"LOG": "1"}},
//!   "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
//!              "headers": {"Authorization": "Bearer ${EXAMPLE_TOKEN}"}}
//! }}
//! ```
//!
//! An entry with a `command` is a program the agent starts and speaks to
//! over its standard input and output (`"type": "stdio"`, the default); an
//! entry with `"type": "http"` is a server already running at `url`,
//! spoken to over Streamable HTTP. `${VAR}` in a URL or a header is filled
//! in when the server is connected, so a token never has to be written
//! into the file.
//!
//! It is loaded defensively, entry by entry: a file that is not JSON, or an
//! entry without what its type needs (a `command` for stdio, a `url` for
//! http), is reported (a notice naming the file, the key and the reason)
//! and skipped; the other entries still load.
//!
//! An entry is read strictly: a field this lesson does not know (a
//! misspelt `agrs`, or another client's `cwd`) is refused, with the same
//! notice, rather than ignored, since a server started without the
//! arguments the user wrote would misbehave with no word why. So the file
//! serves other clients only as far as its entries use these fields.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use shared::notice::Notices;

use super::MCP_TAG;
use super::error::{ExpandError, InvalidServer};

/// The file, at the workspace root.
pub const CONFIG_FILE: &str = ".mcp.json";

// ANCHOR: server_config
/// How to reach one server: a program to start, its arguments, and
/// variables added to its environment (stdio); or a URL and headers to
/// send (Streamable HTTP). Public and `Deserialize`, so other configuration
/// files (lesson 19's settings) can name servers the same way.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program, found on `PATH` unless it is a path; a relative path
    /// starts at the workspace root. Empty for an HTTP server.
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `"stdio"` (the default) or `"http"`, the names other clients write.
    #[serde(default, rename = "type")]
    pub transport: Option<String>,
    /// An HTTP server's endpoint, such as `http://127.0.0.1:8080/mcp`.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent with every HTTP request, such as `Authorization`.
    /// Their values are secrets: never shown, never logged.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}
// ANCHOR_END: server_config

/// Which transport a configured server is spoken to over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process's standard input and output.
    Stdio,
    /// Streamable HTTP, to a server at a URL.
    Http,
}

impl Transport {
    /// Its name in `.mcp.json`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
        }
    }
}

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
            url: None,
            headers: BTreeMap::new(),
        }
    }

    /// A server at `url`, over Streamable HTTP.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            transport: Some(Transport::Http.name().to_string()),
            url: Some(url.into()),
            ..Self::new("", Vec::<String>::new())
        }
    }

    /// The transport this entry names (after [`check`](Self::check), one
    /// this lesson speaks).
    pub fn transport(&self) -> Transport {
        match self.transport.as_deref() {
            Some("http") => Transport::Http,
            _ => Transport::Stdio,
        }
    }

    /// Checks what serde cannot: a command to run or a URL to reach,
    /// matching a transport this lesson speaks.
    pub fn check(self) -> Result<Self, InvalidServer> {
        match self.transport.as_deref() {
            None | Some("stdio") => {
                if self.command.trim().is_empty() {
                    return Err(if self.url.is_some() {
                        InvalidServer::UrlWithoutHttp
                    } else {
                        InvalidServer::EmptyCommand
                    });
                }
                if self.url.is_some() || !self.headers.is_empty() {
                    return Err(InvalidServer::StdioWithUrl);
                }
                Ok(self)
            }
            Some("http") => {
                if self.url.as_deref().is_none_or(|url| url.trim().is_empty()) {
                    return Err(InvalidServer::HttpWithoutUrl);
                }
                if !self.command.is_empty() || !self.args.is_empty() || !self.env.is_empty() {
                    return Err(InvalidServer::HttpWithCommand);
                }
                Ok(self)
            }
            Some("sse") => Err(InvalidServer::Sse),
            Some(other) => Err(InvalidServer::UnknownTransport(other.to_string())),
        }
    }
}

/// `text` with every `${VAR}` replaced by `lookup(VAR)` (`${VAR:-default}`
/// gives `default` when `VAR` is unset); an unset variable without a
/// default is an error naming it. `$` not followed by `{` stays as it is.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ExpandError::Unclosed);
        };
        let inside = &after[..end];
        let (name, default) = match inside.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inside, None),
        };
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(name.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
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
            .map_err(InvalidServer::from)
            .and_then(ServerConfig::check)
        {
            Ok(config) => {
                servers.insert(name.clone(), config);
            }
            Err(reason) => report(&key, reason.to_string()),
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
