//! Lesson 18: MCP over Streamable HTTP. The servers are real processes
//! listening on 127.0.0.1: the course's example server (this test binary
//! started again as that server, see [`example_http_entry`]) on a port the
//! system chose, and — when `npm ci` installed it — the reference
//! `server-everything` in its `streamableHttp` mode. The tests wait for the
//! line each writes when it listens, never for a while.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::notice::Notices;
use shared::protocol::{ContentBlock, Message};
use tokio::io::{AsyncBufReadExt, BufReader};

use lesson::mcp::{McpHub, McpOptions, ServerConfig, VarLookup};
use lesson::permission::ScriptedApprover;

use crate::support;

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
    /// Starts the example server at `addr`, with `token` required if
    /// given, and waits for the line that says it listens.
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
            .env_remove(TOKEN_ENV);
        if let Some(token) = token {
            command.env(TOKEN_ENV, token);
        }
        let (child, line) = spawn_until(command, "listening on ").await;
        Self { child, url: line }
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

/// Starts `command` and waits for the first line of its standard error
/// that starts with `prefix`: the rest of that line. Its standard error is
/// read on after that, so it never blocks on a full pipe; it is killed
/// when dropped.
async fn spawn_until(
    mut command: tokio::process::Command,
    prefix: &str,
) -> (tokio::process::Child, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let rest = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("the server exited before saying `{prefix}…`"));
        if let Some(rest) = line.strip_prefix(prefix) {
            break rest.to_string();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, rest)
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
    assert!(
        old.contains("not supported") && old.contains("\"http\""),
        "{old}"
    );
}

#[test]
fn variables_are_filled_in_and_a_missing_one_is_named() {
    let lookup = |name: &str| (name == "TOKEN").then(|| "abc".to_string());
    let expand = lesson::mcp::config::expand;
    assert_eq!(expand("Bearer ${TOKEN}", &lookup).unwrap(), "Bearer abc");
    assert_eq!(expand("${NOPE:-x}/${TOKEN}", &lookup).unwrap(), "x/abc");
    assert_eq!(expand("$TOKEN", &lookup).unwrap(), "$TOKEN");
    let error = expand("Bearer ${MISSING_TOKEN}", &lookup)
        .unwrap_err()
        .to_string();
    assert!(error.contains("MISSING_TOKEN"), "{error}");
}

/// The tool results of `history`, in order: whether each is an error,
/// and its text.
fn results(history: &[Message]) -> Vec<(bool, String)> {
    history
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some((result.is_error, result.content.text())),
            _ => None,
        })
        .collect()
}

/// The names of the tools a request offered.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_agent_connects_by_url_calls_a_tool_and_follows_a_changed_tool_list() {
    let server = HttpServer::start("127.0.0.1:0", None).await;
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"type": "http", "url": server.url}));
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::tool("mcp__docs__search_docs", json!({"query": "deploy"})),
        Reply::tool("mcp__docs__enable_drafts", json!({})),
        Reply::tool("mcp__docs__search_drafts", json!({"query": "lesson"})),
        Reply::tool("list_mcp", json!({})),
        Reply::text("done"),
    ]));
    let mut agent = support::agent_with(dir.path(), model.clone(), support::options());
    let hub = agent.hooks().mcp().clone();
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    validate(&history).unwrap();
    let results = results(&history);
    assert!(!results[0].0, "{}", results[0].1);
    assert!(
        results[0]
            .1
            .contains("Connected to MCP server `docs` (course-docs"),
        "{}",
        results[0].1
    );
    assert!(hub.pid("docs").is_none(), "nothing was spawned");
    assert!(!results[1].0, "{}", results[1].1);
    assert!(results[1].1.contains("tag the release"), "{}", results[1].1);
    // The server's `tools/list_changed` comes over HTTP too (on the call's
    // SSE stream): the model's next request offers the new tool, and it
    // works.
    let requests = model.requests();
    assert!(!tool_names(&requests[2]).contains(&"mcp__docs__search_drafts".to_string()));
    assert!(tool_names(&requests[3]).contains(&"mcp__docs__search_drafts".to_string()));
    assert!(!results[3].0, "{}", results[3].1);
    assert!(
        results[3].1.contains("Draft release notes"),
        "{}",
        results[3].1
    );
    assert!(
        recorder
            .notices_tagged("mcp")
            .iter()
            .any(|line| line.starts_with("docs: tool list changed")),
        "{:?}",
        recorder.notices
    );
    // list_mcp shows the transport, where the server is, and its state.
    assert!(
        results[4].1.contains(&format!(
            "docs [http {}]: connected (course-docs",
            server.url
        )),
        "{}",
        results[4].1
    );
    hub.stop_all().await;
}

#[tokio::test]
async fn permission_rules_apply_to_an_http_servers_tools_as_to_a_stdio_servers() {
    let server = HttpServer::start("127.0.0.1:0", None).await;
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"type": "http", "url": server.url}));
    let approver = ScriptedApprover::new([true, false]);
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::tool("mcp__docs__search_docs", json!({"query": "deploy"}))
            .and_tool("mcp__docs__delete_doc", json!({"title": "deploy"})),
        Reply::tool("mcp__docs__get_doc", json!({"title": "deploy"})),
        Reply::text("done"),
    ]));
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model, options);
    let hub = agent.hooks().mcp().clone();
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let results = results(&history);
    let asked: Vec<(String, String)> = approver
        .asked()
        .into_iter()
        .map(|request| (request.call.name, request.reason))
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0].0, "connect_mcp");
    assert_eq!(
        asked[1],
        (
            "mcp__docs__delete_doc".to_string(),
            "MCP tool its server marks destructive".to_string()
        )
    );
    assert!(!results[1].0, "the read-only search ran unasked");
    assert!(results[2].0);
    assert!(results[2].1.contains("Permission denied by the user"));
    // The refused call never reached the server: the document is there.
    assert!(!results[3].0, "{}", results[3].1);
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
    // Without a second live dispatcher, tracing would ask a sibling test's
    // thread (which has no subscriber) whether a callsite is wanted and cache
    // its "never" for the process, and this check would pass on no output.
    let _anchor = tracing::Dispatch::new(tracing_subscriber::registry());
    tracing::callsite::rebuild_interest_cache();

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

    // rmcp's transport configuration derives `Debug`, headers and all.
    let headers = [("Authorization".to_string(), format!("Bearer {SECRET}"))].into();
    let config = lesson::mcp::http::config(&server.url, &headers).unwrap();
    let debugged = format!("{config:?}");
    assert!(debugged.contains("authorization"), "{debugged}");

    let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(!logged.is_empty(), "the subscriber saw the connection");
    let mut shown: Vec<String> = [notices, notices_without]
        .iter()
        .flat_map(|notices| notices.take())
        .map(|notice| notice.text)
        .collect();
    shown.extend([
        connected.text,
        found.text,
        missing.text,
        status,
        logged,
        debugged,
    ]);
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
        refused.text.contains("401") && refused.text.contains("a bearer token is required"),
        "{}",
        refused.text
    );
    assert!(!refused.text.contains("not-the-token"), "{}", refused.text);
}

#[tokio::test]
async fn a_server_that_dies_is_an_error_result_and_once_restarted_serves_the_next_call() {
    let mut server = HttpServer::start("127.0.0.1:0", None).await;
    let addr = server.addr();
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"type": "http", "url": server.url}));
    let (hub, notices) = hub(dir.path(), &[]);
    assert!(!hub.connect("docs").await.is_error);
    // Killed while a call runs: that call ends with an error result.
    let waiting = tokio::spawn({
        let hub = hub.clone();
        async move { hub.call("docs", "wait", json!({"seconds": 600})).await }
    });
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|text: &String| text.contains("docs info: waiting"))
    {
        tokio::task::yield_now().await;
        seen.extend(notices.take().into_iter().map(|n| n.text));
    }
    server.kill().await;
    // rmcp tries to resume the call's stream a few times, then gives up:
    // an error result, long before the call's two-minute timeout.
    let cut = waiting.await.unwrap();
    assert!(cut.is_error, "{}", cut.text);
    assert!(cut.text.contains("could not be reached"), "{}", cut.text);

    // No server: an error result at once, not a panic or a wait.
    let failed = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    assert!(failed.is_error, "{}", failed.text);
    assert!(failed.text.contains("`docs`"), "{}", failed.text);

    // The same address again: the next call is served.
    let _restarted = HttpServer::start(&addr, None).await;
    let answer = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert!(answer.text.contains("tag the release"), "{}", answer.text);
    hub.stop_all().await;
}

#[tokio::test]
async fn a_session_the_restarted_server_does_not_know_is_initialized_again_once() {
    let mut server = HttpServer::start("127.0.0.1:0", None).await;
    let addr = server.addr();
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"type": "http", "url": server.url}));
    let (hub, notices) = hub(dir.path(), &[]);
    assert!(!hub.connect("docs").await.is_error);
    // State of this session only: the drafts tool is on.
    assert!(!hub.call("docs", "enable_drafts", json!({})).await.is_error);
    hub.settle().await;
    notices.take();
    server.kill().await;
    let _restarted = HttpServer::start(&addr, None).await;

    // The new server answers our session id with 404; rmcp initializes a
    // new session and sends the call again, without a connect_mcp.
    let answer = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert!(answer.text.contains("tag the release"), "{}", answer.text);
    let said: Vec<String> = notices.take().into_iter().map(|n| n.text).collect();
    let renewed = said
        .iter()
        .filter(|text| text.contains("no longer knows our session"))
        .count();
    assert_eq!(renewed, 1, "{said:?}");
    assert!(
        !said.iter().any(|text| text.contains("connected docs")),
        "{said:?}"
    );
    // It is a new session: what the old one had turned on is off.
    let drafts = hub
        .call("docs", "search_drafts", json!({"query": "lesson"}))
        .await;
    assert!(drafts.is_error, "{}", drafts.text);
    // And it goes on without another renewal.
    assert!(!hub.call("docs", "doc_stats", json!({})).await.is_error);
    let said: Vec<String> = notices.take().into_iter().map(|n| n.text).collect();
    assert!(
        !said
            .iter()
            .any(|text| text.contains("no longer knows our session")),
        "{said:?}"
    );
    hub.stop_all().await;
}

// ---------------------------------------------------------------------
// The reference server from the npm registry (`npm ci` in
// examples/mcp_server/npm), over HTTP. Without node or the package the test
// says so on standard error and returns; under CI (`CI` set) it fails.

#[tokio::test]
async fn the_reference_everything_server_over_http_lists_and_calls() {
    let Some(config) = support::npm_server("server-everything", &["streamableHttp"]) else {
        return;
    };
    // It takes its port from `PORT` and says the port it was given, so
    // the test picks a free one (the system's choice, released just before).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).env("PORT", port.to_string());
    let (_server, _) = spawn_until(command, "MCP Streamable HTTP Server listening on port").await;
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        json!({"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}),
    );
    let (hub, _) = hub(dir.path(), &[]);
    let connected = hub.connect("docs").await;
    assert!(!connected.is_error, "{}", connected.text);
    let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.name).collect();
    assert!(names.contains(&"mcp__docs__echo".to_string()), "{names:?}");
    let echo = hub
        .call("docs", "echo", json!({"message": "hi over http"}))
        .await;
    assert!(!echo.is_error, "{}", echo.text);
    assert!(echo.text.contains("hi over http"), "{}", echo.text);
    let sum = hub.call("docs", "get-sum", json!({"a": 2, "b": 3})).await;
    assert!(sum.text.contains('5'), "{}", sum.text);
    let unknown = hub.call("docs", "no-such-tool", json!({})).await;
    assert!(unknown.is_error);
    hub.stop_all().await;
}
