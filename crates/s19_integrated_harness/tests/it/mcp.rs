//! Lesson 18: MCP over the real protocol. The servers are real processes
//! speaking JSON-RPC over stdio: the course's own example server (this
//! test binary, started again as that server, see [`example_server_entry`]),
//! small shell scripts that misbehave, and — when `npm ci` installed them —
//! the reference servers `server-filesystem` and `server-everything`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Event, Observer};
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::notice::Notices;
use shared::protocol::{ContentBlock, Message};
use shared::testing::Recorder;

use lesson::mcp::{McpHub, McpOptions, ServerConfig};
use lesson::permission::ScriptedApprover;

use crate::support;

/// Not a test of its own: when [`support::SERVE_EXAMPLE_ENV`] is set, this
/// test binary *is* the course's example MCP server, on its standard input
/// and output. The tests start it that way because a test must not run
/// `cargo` (the build directory is locked while tests run). Without the
/// variable it returns at once.
#[tokio::test]
async fn example_server_entry() {
    if std::env::var_os(support::SERVE_EXAMPLE_ENV).is_some() {
        mcp_example_server::serve_stdio().await.unwrap();
    }
}

/// Writes `.mcp.json` in `dir` with `servers`.
fn write_config(dir: &Path, servers: &[(&str, &ServerConfig)]) {
    let entries: serde_json::Map<String, Value> = servers
        .iter()
        .map(|(name, config)| {
            (
                name.to_string(),
                json!({"command": config.command, "args": config.args, "env": config.env}),
            )
        })
        .collect();
    std::fs::write(
        dir.join(".mcp.json"),
        serde_json::to_string_pretty(&json!({ "mcpServers": entries })).unwrap(),
    )
    .unwrap();
}

/// A shell script run as a server.
fn script(text: &str) -> ServerConfig {
    ServerConfig::new("sh", ["-c", text])
}

/// Options with a short start-up timeout, for the tests of a server that
/// never answers its handshake. Only those use it: a wall-clock deadline on
/// something that should succeed is a test that fails when the machine is
/// busy, so every other test keeps the defaults.
fn quick() -> McpOptions {
    McpOptions {
        startup_timeout: Duration::from_millis(1_500),
        ..McpOptions::default()
    }
}

/// A hub in `dir` with the example server configured as `docs`.
fn docs_hub(dir: &Path, options: McpOptions) -> (McpHub, Notices) {
    write_config(dir, &[("docs", &support::example_server())]);
    let notices = Notices::new();
    (McpHub::new(dir, notices.clone(), options), notices)
}

/// One tool result: whether it is an error, and its text.
struct Outcome {
    is_error: bool,
    content: String,
}

/// The tool results of `history`, in order.
fn results(history: &[Message]) -> Vec<Outcome> {
    history
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some(Outcome {
                is_error: result.is_error,
                content: result.content.text(),
            }),
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

/// Whether process `pid` still runs (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn mcp_json_is_loaded_entry_by_entry_and_bad_entries_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {
            "good": {"command": "node", "args": ["server.js"], "env": {"A": "1"}},
            "no_command": {"args": []},
            "empty": {"command": " "},
            "remote": {"command": "x", "type": "sse"},
            "typo": {"command": "x", "argz": []}
        }}"#,
    )
    .unwrap();
    let notices = Notices::new();
    let servers = lesson::mcp::config::load(dir.path(), &notices);
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["good"]);
    assert_eq!(servers["good"].args, ["server.js"]);
    assert_eq!(servers["good"].env["A"], "1");
    let reported: Vec<String> = notices.take().into_iter().map(|n| n.text).collect();
    assert_eq!(reported.len(), 4, "{reported:?}");
    for key in ["no_command", "empty", "remote", "typo"] {
        assert!(
            reported
                .iter()
                .any(|line| line.contains(".mcp.json")
                    && line.contains(&format!("mcpServers.{key}"))),
            "{key} not reported in {reported:?}"
        );
    }

    std::fs::write(dir.path().join(".mcp.json"), "{not json").unwrap();
    assert!(lesson::mcp::config::load(dir.path(), &notices).is_empty());
    assert!(notices.take()[0].text.contains("not valid JSON"));
    // No file, no servers, nothing to report.
    std::fs::remove_file(dir.path().join(".mcp.json")).unwrap();
    assert!(lesson::mcp::config::load(dir.path(), &notices).is_empty());
    assert!(notices.take().is_empty());
}

#[tokio::test]
async fn connecting_adds_the_servers_tools_at_the_end_and_the_model_calls_one() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &[("docs", &support::example_server())]);
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::tool("mcp__docs__search_docs", json!({"query": "worktree"})),
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::text("done"),
    ]));
    let mut agent = support::agent_with(dir.path(), model.clone(), support::options());
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "search the docs").await;
    outcome.unwrap();
    validate(&history).unwrap();

    let results = results(&history);
    assert!(!results[0].is_error, "{}", results[0].content);
    assert!(
        results[0]
            .content
            .contains("Connected to MCP server `docs` (course-docs")
    );
    assert!(
        results[0]
            .content
            .contains("mcp__docs__delete_doc (destructive)")
    );
    assert!(!results[1].is_error);
    assert!(
        results[1].content.contains("Worktree cleanup policy"),
        "{}",
        results[1].content
    );
    assert!(
        results[2].content.contains("already connected"),
        "{}",
        results[2].content
    );

    let requests = model.requests();
    let before = tool_names(&requests[0]);
    let after = tool_names(&requests[1]);
    assert_eq!(before, support::TOOLS);
    // The built-in tools first, unchanged, byte for byte (but for the
    // cache mark on the last tool); the servers' after them.
    assert_eq!(after[..before.len()], before[..]);
    let strip = |tool: &Value| {
        let mut tool = tool.clone();
        tool.as_object_mut().unwrap().remove("cache_control");
        tool
    };
    for (old, new) in requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .zip(requests[1]["tools"].as_array().unwrap())
    {
        assert_eq!(strip(old), strip(new));
    }
    let added: Vec<&str> = after[before.len()..].iter().map(String::as_str).collect();
    assert_eq!(
        added,
        [
            "mcp__docs__search_docs",
            "mcp__docs__get_doc",
            "mcp__docs__doc_stats",
            "mcp__docs__logo",
            "mcp__docs__reindex",
            "mcp__docs__list_roots",
            "mcp__docs__enable_drafts",
            "mcp__docs__delete_doc",
            "mcp__docs__wait",
        ]
    );
    let spec = |name: &str| {
        requests[1]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap()
            .clone()
    };
    assert!(
        spec("mcp__docs__search_docs")["description"]
            .as_str()
            .unwrap()
            .ends_with("(readOnly)")
    );
    assert!(
        spec("mcp__docs__delete_doc")["description"]
            .as_str()
            .unwrap()
            .ends_with("(destructive)")
    );
    assert_eq!(
        spec("mcp__docs__get_doc")["input_schema"]["required"],
        json!(["title"])
    );

    // The system prompt says which servers there are, and changed once.
    let system = |request: &Value| request["system"].to_string();
    assert!(system(&requests[0]).contains("- docs: not connected"));
    assert!(system(&requests[1]).contains("- docs: connected, 9 tools named mcp__docs__*"));
    assert_eq!(system(&requests[1]), system(&requests[2]));
    assert_eq!(requests[1]["tools"], requests[2]["tools"]);
    assert!(
        recorder
            .notices_tagged("mcp")
            .iter()
            .any(|line| line.starts_with("connected docs (course-docs")),
        "{:?}",
        recorder.notices
    );
}

#[tokio::test]
async fn an_unknown_server_lists_the_configured_ones() {
    let dir = tempfile::tempdir().unwrap();
    let notices = Notices::new();
    let hub = McpHub::new(dir.path(), notices.clone(), McpOptions::default());
    let output = hub.connect("docs").await;
    assert!(output.is_error);
    assert!(
        output.text.contains("no servers are configured"),
        "{}",
        output.text
    );
    assert!(output.text.contains(".mcp.json"));
    assert!(hub.status().contains("No MCP servers are configured"));

    // A server added to .mcp.json while the agent runs is found.
    write_config(
        dir.path(),
        &[
            ("docs", &support::example_server()),
            ("files", &script("true")),
        ],
    );
    let output = hub.connect("doc").await;
    assert!(output.is_error);
    assert!(
        output.text.contains("Configured servers: docs, files."),
        "{}",
        output.text
    );
    assert_eq!(
        hub.status(),
        "docs [stdio]: not connected\nfiles [stdio]: not connected"
    );
}

#[tokio::test]
async fn a_tool_not_claimed_read_only_asks_and_a_refusal_is_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &[("docs", &support::example_server())]);
    let approver = ScriptedApprover::new([true, false, true]);
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::tool("mcp__docs__search_docs", json!({"query": "deploy"}))
            .and_tool("mcp__docs__delete_doc", json!({"title": "deploy"}))
            .and_tool("mcp__docs__enable_drafts", json!({})),
        Reply::text("done"),
    ]));
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model, options);
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let results = results(&history);
    let asked: Vec<(String, String)> = approver
        .asked()
        .into_iter()
        .map(|request| (request.call.name, request.reason))
        .collect();
    assert_eq!(
        asked,
        [
            (
                "connect_mcp".to_string(),
                "Starting an MCP server (runs the command .mcp.json names)".to_string()
            ),
            (
                "mcp__docs__delete_doc".to_string(),
                "MCP tool its server marks destructive".to_string()
            ),
            (
                "mcp__docs__enable_drafts".to_string(),
                "MCP tool its server does not mark read-only".to_string()
            ),
        ]
    );
    assert!(!results[1].is_error, "the read-only search ran unasked");
    assert!(results[2].is_error);
    assert!(results[2].content.contains("Permission denied by the user"));
    assert!(!results[3].is_error, "{}", results[3].content);
}

#[tokio::test]
async fn failures_of_the_tool_and_of_the_protocol_are_error_results_with_the_servers_message() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _) = docs_hub(dir.path(), McpOptions::default());
    assert!(!hub.connect("docs").await.is_error);

    // isError: true in the result.
    let output = hub.call("docs", "get_doc", json!({"title": "nope"})).await;
    assert!(output.is_error);
    assert!(
        output.text.contains("no document titled `nope`"),
        "{}",
        output.text
    );
    // A JSON-RPC error.
    let output = hub.call("docs", "no_such_tool", json!({})).await;
    assert!(output.is_error);
    assert!(
        output
            .text
            .contains("refused the call: unknown tool: no_such_tool"),
        "{}",
        output.text
    );
    // Input that is not an object never reaches the server.
    let output = hub.call("docs", "search_docs", json!(["deploy"])).await;
    assert!(output.is_error);
    assert!(output.text.contains("must be a JSON object"));
    // An unconnected server.
    let output = hub.call("files", "read", json!({})).await;
    assert!(output.is_error);
    assert!(output.text.contains("`files` is not connected"));
    hub.stop_all().await;
}

#[tokio::test]
async fn non_text_content_is_summarised_and_structured_content_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _) = docs_hub(dir.path(), McpOptions::default());
    assert!(!hub.connect("docs").await.is_error);

    let logo = hub.call("docs", "logo", json!({})).await;
    assert_eq!(logo.text, "[image: image/png, 68 bytes, not shown]");
    let doc = hub
        .call("docs", "get_doc", json!({"title": "deploy"}))
        .await;
    assert!(!doc.is_error);
    assert!(
        doc.text
            .starts_with("[resource docs://deploy]\nDeploying: run the tests"),
        "{}",
        doc.text
    );
    assert!(
        doc.text
            .ends_with("[resource link: docs://deploy (deploy)]"),
        "{}",
        doc.text
    );
    let stats = hub.call("docs", "doc_stats", json!({})).await;
    assert!(
        stats
            .text
            .starts_with("structured content: {\"documents\":4,\"words\":"),
        "{}",
        stats.text
    );
    hub.stop_all().await;
}

/// Waits until `notices` has a notice containing `needle`, collecting
/// what it takes into `seen`.
async fn wait_for_notice(notices: &Notices, needle: &str, seen: &mut Vec<String>) {
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            seen.extend(notices.take().into_iter().map(|n| n.text));
            if seen.iter().any(|line| line.contains(needle)) {
                return;
            }
            notices.ready().await;
        }
    })
    .await;
    assert!(found.is_ok(), "never saw {needle:?} in {seen:?}");
}

#[tokio::test]
async fn progress_and_log_messages_become_notices_and_roots_are_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, notices) = docs_hub(dir.path(), McpOptions::default());
    assert!(!hub.connect("docs").await.is_error);
    let output = hub.call("docs", "reindex", json!({})).await;
    assert_eq!(output.text, "reindexed 4 documents");
    let mut seen = Vec::new();
    wait_for_notice(
        &notices,
        "docs: progress 4/4: indexed worktree-cleanup",
        &mut seen,
    )
    .await;
    wait_for_notice(&notices, "docs info: indexed deploy", &mut seen).await;
    assert!(
        seen.iter()
            .any(|line| line == "docs: progress 1/4: indexed deploy"),
        "{seen:?}"
    );

    let roots = hub.call("docs", "list_roots", json!({})).await;
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        roots.text,
        format!(
            "The client shares 1 root(s): {}",
            lesson::mcp::client::file_uri(&root)
        )
    );
    hub.stop_all().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again_and_the_pool_follows() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &[("docs", &support::example_server())]);
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::tool("mcp__docs__enable_drafts", json!({})),
        Reply::tool("mcp__docs__search_drafts", json!({"query": "lesson"})),
        Reply::text("done"),
    ]));
    let mut agent = support::agent_with(dir.path(), model.clone(), support::options());
    let hub = agent.hooks().mcp().clone();
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let results = results(&history);
    let requests = model.requests();
    assert!(!tool_names(&requests[1]).contains(&"mcp__docs__search_drafts".to_string()));
    // The call after the change already offers the new tool, and it works.
    assert!(tool_names(&requests[2]).contains(&"mcp__docs__search_drafts".to_string()));
    assert!(!results[2].is_error, "{}", results[2].content);
    assert!(results[2].content.contains("Draft release notes"));
    assert!(
        recorder
            .notices_tagged("mcp")
            .iter()
            .any(|line| line
                == "docs: tool list changed, now 10 tools; added mcp__docs__search_drafts"),
        "{:?}",
        recorder.notices
    );
    assert!(!results[1].is_error);
    hub.stop_all().await;
}

#[tokio::test]
async fn servers_that_fail_to_start_give_clear_errors_and_the_agent_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        &[
            (
                "missing",
                &ServerConfig::new("/nonexistent/mcp-server", Vec::<String>::new()),
            ),
            (
                "dies",
                &script("echo 'cannot find config.toml' >&2; exit 3"),
            ),
        ],
    );
    let notices = Notices::new();
    let hub = McpHub::new(dir.path(), notices, McpOptions::default());

    let missing = hub.connect("missing").await;
    assert!(missing.is_error);
    assert!(
        missing
            .text
            .contains("cannot run `/nonexistent/mcp-server`"),
        "{}",
        missing.text
    );

    let dies = hub.connect("dies").await;
    assert!(dies.is_error);
    assert!(dies.text.contains("the handshake failed"), "{}", dies.text);
    // What the server wrote to standard error is in its log, not on the
    // terminal, and the error quotes it.
    assert!(
        dies.text.contains("cannot find config.toml"),
        "{}",
        dies.text
    );
    let log = std::fs::read_to_string(dir.path().join(".mcp_logs/dies.log")).unwrap();
    assert_eq!(log, "cannot find config.toml\n");
    assert!(hub.tools().is_empty());
    assert!(hub.status().contains("dies [stdio]: not connected"));
}

// Paused time: the runtime's clock jumps to the start-up deadline as soon
// as nothing is left to do but wait for an answer that never comes, so the
// timeout is tested without waiting for it, and without a wall-clock
// deadline a busy machine could miss.
#[tokio::test(start_paused = true)]
async fn servers_that_never_answer_the_handshake_time_out_and_the_agent_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        &[
            (
                "garbage",
                &script("while true; do echo 'Server ready!'; sleep 0.2; done"),
            ),
            ("hangs", &script("exec sleep 60")),
        ],
    );
    let hub = McpHub::new(dir.path(), Notices::new(), quick());
    for name in ["garbage", "hangs"] {
        let output = hub.connect(name).await;
        assert!(output.is_error, "{name}");
        assert!(
            output
                .text
                .contains("no answer to the handshake within 1.5 s"),
            "{name}: {}",
            output.text
        );
    }
    assert!(hub.tools().is_empty());
    assert!(hub.status().contains("hangs [stdio]: not connected"));
}

#[tokio::test]
async fn a_call_that_takes_too_long_is_cancelled_and_the_server_stays() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _) = docs_hub(dir.path(), McpOptions::default());
    assert!(!hub.connect("docs").await.is_error);
    // Only for the call that hangs, paused time: the clock jumps to the
    // call's deadline once nothing is left to do but wait for the server.
    tokio::time::pause();
    let output = hub.call("docs", "wait", json!({"seconds": 600})).await;
    tokio::time::resume();
    assert!(output.is_error);
    assert!(
        output.text.contains("did not answer `wait` within 120 s"),
        "{}",
        output.text
    );
    let output = hub
        .call("docs", "search_docs", json!({"query": "deploy"}))
        .await;
    assert!(!output.is_error, "{}", output.text);
    hub.stop_all().await;
}

/// An observer that kills the server named in the hub once the server
/// logged that its call began, and records everything.
struct KillOnWait {
    hub: McpHub,
    killed: Option<u32>,
    recorder: Recorder,
}

impl Observer for KillOnWait {
    fn event(&mut self, event: Event<'_>) {
        if let Event::Notice(notice) = &event
            && notice.text.contains("docs info: waiting")
            && self.killed.is_none()
        {
            let pid = self.hub.pid("docs").unwrap();
            std::process::Command::new("kill")
                .arg("-9")
                .arg(pid.to_string())
                .status()
                .unwrap();
            self.killed = Some(pid);
        }
        self.recorder.event(event);
    }
}

// ANCHOR: killed
#[tokio::test]
async fn a_server_killed_mid_call_gives_an_error_result_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &[("docs", &support::example_server())]);
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::tool("mcp__docs__wait", json!({"seconds": 60})),
        Reply::tool("mcp__docs__search_docs", json!({"query": "deploy"})),
        Reply::tool("connect_mcp", json!({"name": "docs"})),
        Reply::tool("mcp__docs__search_docs", json!({"query": "deploy"})),
        Reply::text("done"),
    ]));
    let mut agent = support::agent_with(dir.path(), model.clone(), support::options());
    let mut observer = KillOnWait {
        hub: agent.hooks().mcp().clone(),
        killed: None,
        recorder: Recorder::default(),
    };
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut observer, &CancellationToken::new())
        .await
        .unwrap();
    validate(&history).unwrap();
    let killed = observer
        .killed
        .expect("the server was killed during the call");
    let results = results(&history);
    assert!(results[1].is_error);
    assert!(
        results[1].content.contains("MCP server `docs` is gone"),
        "{}",
        results[1].content
    );
    // Its tools left the pool; the model's call of one is an unknown tool.
    assert!(results[2].is_error);
    assert!(
        results[2]
            .content
            .contains("Unknown tool: mcp__docs__search_docs")
    );
    assert!(
        !tool_names(&model.requests()[2])
            .iter()
            .any(|name| name.starts_with("mcp__"))
    );
    // connect_mcp starts it again, and its tools work.
    assert!(!results[3].is_error, "{}", results[3].content);
    assert!(!results[4].is_error, "{}", results[4].content);
    let new_pid = agent.hooks().mcp().pid("docs").unwrap();
    assert_ne!(new_pid, killed);
    agent.finish(&mut Recorder::default()).await;
    assert!(!alive(new_pid));
}
// ANCHOR_END: killed

#[tokio::test]
async fn a_name_made_equal_by_normalising_is_refused_not_shadowed() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        &[
            ("my_docs", &support::example_server()),
            ("my.docs", &support::example_server()),
        ],
    );
    let hub = McpHub::new(dir.path(), Notices::new(), McpOptions::default());
    assert!(!hub.connect("my_docs").await.is_error);
    let second = hub.connect("my.docs").await;
    assert!(!second.is_error, "{}", second.text);
    assert!(second.text.contains("No tools."), "{}", second.text);
    assert!(
        second.text.contains(
            "Refused: `search_docs` not added: its name mcp__my_docs__search_docs is already \
             `search_docs` of server `my_docs`'s."
        ),
        "{}",
        second.text
    );
    // Every tool keeps calling the first server's.
    let tools = hub.tools();
    assert_eq!(tools.len(), 9);
    assert!(tools.iter().all(|tool| tool.server == "my_docs"));
    hub.stop_all().await;
}

#[tokio::test]
async fn every_server_is_stopped_when_the_session_ends() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        &[
            ("a", &support::example_server()),
            ("b", &support::example_server()),
        ],
    );
    let (mut agent, _) = support::agent(
        dir.path(),
        vec![
            Reply::tool("connect_mcp", json!({"name": "a"}))
                .and_tool("connect_mcp", json!({"name": "b"})),
            Reply::text("done"),
        ],
    );
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let pids: Vec<u32> = ["a", "b"]
        .iter()
        .map(|name| agent.hooks().mcp().pid(name).unwrap())
        .collect();
    assert!(pids.iter().all(|pid| alive(*pid)));
    agent.finish(&mut Recorder::default()).await;
    for pid in pids {
        assert!(!alive(pid), "server {pid} outlived the session");
    }
}

// ---------------------------------------------------------------------
// Third-party servers, from the npm registry (`npm ci` in
// examples/mcp_server/npm). Without node or the packages these tests say
// so on standard error and return; under CI (`CI` set) they fail instead.

#[tokio::test]
async fn the_reference_filesystem_server_lists_reads_refuses_and_uses_our_root() {
    let Some(server) = support::npm_server("server-filesystem", &[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello from the workspace\n").unwrap();
    // No directory on its command line: it asks the client for its roots.
    write_config(dir.path(), &[("fs", &server)]);
    let notices = Notices::new();
    let hub = McpHub::new(dir.path(), notices.clone(), McpOptions::default());
    let connected = hub.connect("fs").await;
    assert!(!connected.is_error, "{}", connected.text);
    assert!(
        connected
            .text
            .contains("mcp__fs__read_text_file (readOnly)"),
        "{}",
        connected.text
    );
    let mut seen = Vec::new();
    wait_for_notice(&notices, "fs: asked for roots", &mut seen).await;

    // The server applies our answer after it arrives; ask until it has.
    let root = dir.path().canonicalize().unwrap();
    let mut allowed = String::new();
    for _ in 0..100 {
        allowed = hub
            .call("fs", "list_allowed_directories", json!({}))
            .await
            .text;
        if allowed.contains(&root.display().to_string()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(allowed.contains(&root.display().to_string()), "{allowed}");
    let output = hub
        .call(
            "fs",
            "read_text_file",
            json!({"path": root.join("notes.txt")}),
        )
        .await;
    assert!(!output.is_error, "{}", output.text);
    assert!(output.text.contains("hello from the workspace"));
    let output = hub
        .call("fs", "read_text_file", json!({"path": "/etc/hostname"}))
        .await;
    assert!(output.is_error, "{}", output.text);
    assert!(
        output.text.contains("outside allowed directories"),
        "{}",
        output.text
    );
    let output = hub.call("fs", "read_text_file", json!({})).await;
    assert!(output.is_error, "{}", output.text);
    hub.stop_all().await;
}

#[tokio::test]
async fn the_reference_everything_server_lists_calls_reports_progress_and_errors() {
    let Some(server) = support::npm_server("server-everything", &["stdio"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &[("everything", &server)]);
    let notices = Notices::new();
    let hub = McpHub::new(dir.path(), notices.clone(), McpOptions::default());
    let connected = hub.connect("everything").await;
    assert!(!connected.is_error, "{}", connected.text);
    let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.name).collect();
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"mcp__everything__trigger-long-running-operation".to_string()));

    let echo = hub
        .call("everything", "echo", json!({"message": "hi"}))
        .await;
    assert!(!echo.is_error);
    assert!(echo.text.contains("hi"), "{}", echo.text);
    let sum = hub
        .call("everything", "get-sum", json!({"a": 2, "b": 3}))
        .await;
    assert!(sum.text.contains('5'), "{}", sum.text);
    let image = hub.call("everything", "get-tiny-image", json!({})).await;
    assert!(image.text.contains("[image: image/png"), "{}", image.text);
    let links = hub
        .call("everything", "get-resource-links", json!({"count": 2}))
        .await;
    assert!(links.text.contains("[resource link: "), "{}", links.text);

    let long = hub
        .call(
            "everything",
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        )
        .await;
    assert!(!long.is_error, "{}", long.text);
    let mut seen = Vec::new();
    wait_for_notice(&notices, "everything: progress 3/3", &mut seen).await;

    let unknown = hub.call("everything", "no-such-tool", json!({})).await;
    assert!(unknown.is_error);
    assert!(unknown.text.contains("no-such-tool"), "{}", unknown.text);
    let bad = hub.call("everything", "get-sum", json!({"a": "two"})).await;
    assert!(bad.is_error, "{}", bad.text);
    hub.stop_all().await;
}
