//! Lesson 18: MCP over Streamable HTTP. The server is the course's example
//! server, a real process listening on 127.0.0.1 (this test binary started
//! again as that server, see [`example_http_entry`]), on a port the system
//! chose; the tests wait for the line it writes when it listens.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::json;
use shared::notice::Notices;
use tokio::io::{AsyncBufReadExt, BufReader};

use lesson::mcp::{McpHub, McpOptions, ServerConfig, VarLookup};

/// Makes this test binary the example server over HTTP, at the address
/// it names (`127.0.0.1:0` for any free port).
const SERVE_HTTP_ENV: &str = "S18_SERVE_EXAMPLE_MCP_HTTP";
/// The variable the served example server takes its bearer token from.
const TOKEN_ENV: &str = "S18_EXAMPLE_MCP_TOKEN";
/// The token the tests use: a string that appears nowhere else.
const SECRET: &str = "s3cret-0f-the-http-tests";

/// Not a test of its own: with [`SERVE_HTTP_ENV`] set, this test binary
/// *is* the example server over Streamable HTTP (requiring a bearer token
/// when [`TOKEN_ENV`] is set). Without it, it returns at once.
#[tokio::test]
async fn example_http_entry() {
    if let Ok(addr) = std::env::var(SERVE_HTTP_ENV) {
        let token = std::env::var(TOKEN_ENV).ok();
        mcp_example_server::serve_http(addr.parse().unwrap(), token)
            .await
            .unwrap();
    }
}

/// A running example server over HTTP, killed when dropped.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    /// Starts it at `addr`, with `token` required if given, and waits for
    /// the line that says it listens.
    async fn start(addr: &str, token: Option<&str>) -> Self {
        let exe = std::env::current_exe().unwrap();
        let mut command = tokio::process::Command::new(exe);
        command
            .args([
                "mcp_http::example_http_entry",
                "--exact",
                "--nocapture",
                "--test-threads=1",
                "--quiet",
            ])
            .env(SERVE_HTTP_ENV, addr)
            .env_remove(TOKEN_ENV)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(token) = token {
            command.env(TOKEN_ENV, token);
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server says where it listens before anything else");
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.to_string();
            }
        };
        // Keep reading, so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, url }
    }

    /// The `host:port` it listens on.
    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    }

    /// Kills it and waits until it is gone.
    async fn kill(&mut self) {
        self.child.kill().await.unwrap();
    }
}

/// Writes `.mcp.json` in `dir` with `entry` as server `docs`.
fn write_config(dir: &Path, entry: serde_json::Value) {
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"docs": entry}}).to_string(),
    )
    .unwrap();
}

/// A hub in `dir` whose `${VAR}`s are looked up in `vars`.
fn hub(dir: &Path, vars: &[(&str, &str)]) -> (McpHub, Notices) {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    let options = McpOptions {
        vars: VarLookup::new(move |name| {
            vars.iter()
                .find(|(var, _)| var == name)
                .map(|(_, value)| value.clone())
        }),
        ..McpOptions::default()
    };
    let notices = Notices::new();
    (McpHub::new(dir, notices.clone(), options), notices)
}

#[test]
fn mcp_json_names_http_servers_by_type_and_url_and_refuses_sse() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {
            "remote": {"type": "http", "url": "https://example.com/mcp",
                       "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "old": {"type": "sse", "url": "https://example.com/sse"},
            "no_url": {"type": "http"},
            "both": {"type": "http", "url": "http://x/mcp", "command": "x"}
        }}"#,
    )
    .unwrap();
    let notices = Notices::new();
    let servers = lesson::mcp::config::load(dir.path(), &notices);
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["remote"]);
    assert_eq!(servers["remote"].transport(), lesson::mcp::Transport::Http);
    assert_eq!(servers["remote"], {
        let mut expected = ServerConfig::http("https://example.com/mcp");
        expected
            .headers
            .insert("Authorization".into(), "Bearer ${TOKEN}".into());
        expected
    });
    let reported: Vec<String> = notices.take().into_iter().map(|n| n.text).collect();
    assert_eq!(reported.len(), 3, "{reported:?}");
    let old = reported.iter().find(|text| text.contains("old")).unwrap();
    assert!(old.contains("not supported") && old.contains("\"http\""), "{old}");
}

#[test]
fn variables_are_filled_in_and_a_missing_one_is_named() {
    let lookup = |name: &str| (name == "TOKEN").then(|| "abc".to_string());
    let expand = lesson::mcp::config::expand;
    assert_eq!(expand("Bearer ${TOKEN}", &lookup).unwrap(), "Bearer abc");
    assert_eq!(expand("${NOPE:-x}/${TOKEN}", &lookup).unwrap(), "x/abc");
    assert_eq!(expand("$TOKEN", &lookup).unwrap(), "$TOKEN");
    let error = expand("Bearer ${MISSING_TOKEN}", &lookup).unwrap_err();
    assert!(error.contains("MISSING_TOKEN"), "{error}");
}

#[tokio::test]
async fn the_agent_connects_by_url_and_calls_a_tool() {
    let server = HttpServer::start("127.0.0.1:0", None).await;
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"type": "http", "url": server.url}));
    let (hub, _) = hub(dir.path(), &[]);
    let connected = hub.connect("docs").await;
    assert!(!connected.is_error, "{}", connected.text);
    assert!(connected.text.contains("course-docs"), "{}", connected.text);
    assert!(hub.pid("docs").is_none(), "nothing was spawned");
    let found = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    assert!(!found.is_error, "{}", found.text);
    assert!(found.text.contains("tag the release"), "{}", found.text);
    // /status and list_mcp show the transport and the state.
    let status = hub.status();
    assert!(
        status.contains(&format!("docs [http {}]: connected", server.url)),
        "{status}"
    );
    // The tool list changes over HTTP too: the server's notification comes
    // on the call's SSE stream, and the next turn sees the new tool.
    let enabled = hub.call("docs", "enable_drafts", json!({})).await;
    assert!(!enabled.is_error, "{}", enabled.text);
    hub.settle().await;
    assert!(
        hub.tools().iter().any(|tool| tool.name == "mcp__docs__search_drafts"),
        "{:?}",
        hub.tools()
    );
    hub.stop_all().await;
}

/// Everything the tracing subscriber of [`no_secret_is_logged`] writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_token_from_a_variable_is_sent_and_never_shown_or_logged() {
    let server = HttpServer::start("127.0.0.1:0", Some(SECRET)).await;
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        json!({"type": "http", "url": server.url,
               "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}),
    );
    // Everything at trace level, on this test's one thread (where the
    // runtime runs every task), goes to `captured`.
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    // No variable: a clear error naming it, before any request.
    let (hub_without, notices_without) = hub(dir.path(), &[]);
    let missing = hub_without.connect("docs").await;
    assert!(missing.is_error);
    assert!(missing.text.contains("DOCS_TOKEN"), "{}", missing.text);

    let (hub, notices) = hub(dir.path(), &[("DOCS_TOKEN", SECRET)]);
    let connected = hub.connect("docs").await;
    assert!(!connected.is_error, "{}", connected.text);
    let found = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    assert!(!found.is_error, "{}", found.text);
    let status = hub.status();
    hub.stop_all().await;

    let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(!logged.is_empty(), "the subscriber saw the connection");
    let mut shown: Vec<String> = [notices, notices_without]
        .iter()
        .flat_map(|notices| notices.take())
        .map(|notice| notice.text)
        .collect();
    shown.extend([connected.text, found.text, missing.text, status, logged]);
    for file in walk(dir.path()) {
        shown.push(std::fs::read_to_string(file).unwrap_or_default());
    }
    for text in shown {
        assert!(!text.contains(SECRET), "the token shows in: {text}");
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn a_wrong_token_reaches_the_model_as_an_error() {
    let server = HttpServer::start("127.0.0.1:0", Some(SECRET)).await;
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        json!({"type": "http", "url": server.url,
               "headers": {"Authorization": "Bearer not-the-token"}}),
    );
    let (hub, _) = hub(dir.path(), &[]);
    let refused = hub.connect("docs").await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(
        refused.text.contains("401") || refused.text.to_lowercase().contains("auth"),
        "{}",
        refused.text
    );
    assert!(!refused.text.contains("not-the-token"), "{}", refused.text);
}

#[tokio::test]
async fn a_server_that_dies_mid_session_is_an_error_result_and_a_restart_starts_a_new_session() {
    let mut server = HttpServer::start("127.0.0.1:0", None).await;
    let addr = server.addr();
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"type": "http", "url": server.url}));
    let (hub, notices) = hub(dir.path(), &[]);
    assert!(!hub.connect("docs").await.is_error);
    // The session's state: the drafts tool is on in this session only.
    assert!(!hub.call("docs", "enable_drafts", json!({})).await.is_error);
    server.kill().await;

    let failed = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    assert!(failed.is_error, "{}", failed.text);
    assert!(failed.text.contains("docs"), "{}", failed.text);

    // The same address again: a new server, which knows no session.
    let _restarted = HttpServer::start(&addr, None).await;
    let mut answer = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    if answer.is_error {
        // The hub let the dead connection go; connect_mcp starts a new one.
        assert!(!hub.connect("docs").await.is_error);
        answer = hub
            .call("docs", "search_docs", json!({"query": "deploy"}))
            .await;
    }
    assert!(!answer.is_error, "{}", answer.text);
    assert!(answer.text.contains("tag the release"), "{}", answer.text);
    let said: Vec<String> = notices.take().into_iter().map(|n| n.text).collect();
    println!("{said:?}");
    hub.stop_all().await;
}
