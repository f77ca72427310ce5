//! Lesson 18's demo, as the chapter runs it: no key, so the demo model
//! plays `demo.json` against the real harness and a real MCP server — the
//! course's example server, which the test binary runs itself as (the
//! `.mcp.json` the test writes names it; the demo writes one only where
//! there is none). `--yes` stands in for the user approving the server's
//! start and the destructive call. The demo runs twice in the same
//! directory.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support;

const DEADLINE: Duration = Duration::from_secs(120);

/// Reads `lines` until each of `needles` has appeared, in any order.
async fn read_until_all(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    needles: &[&str],
    seen: &mut String,
) {
    let found = tokio::time::timeout(DEADLINE, async {
        let mut missing: Vec<&str> = needles.to_vec();
        missing.retain(|needle| !seen.contains(needle));
        while !missing.is_empty() {
            let Some(line) = lines.next_line().await.unwrap() else {
                return false;
            };
            seen.push_str(&line);
            seen.push('\n');
            missing.retain(|needle| !line.contains(needle));
        }
        true
    })
    .await;
    assert!(
        found == Ok(true),
        "never saw all of {needles:?} in:\n{seen}"
    );
}

#[tokio::test]
async fn the_demo_connects_the_docs_server_calls_its_tools_and_asks_before_the_destructive_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = support::example_server();
    let config = serde_json::json!({"mcpServers": {"docs": {
        "command": server.command, "args": server.args, "env": server.env
    }}});
    std::fs::write(dir.path().join(".mcp.json"), config.to_string()).unwrap();
    play(dir.path()).await;
    play(dir.path()).await;
}

async fn play(dir: &Path) {
    let mut child = support::binary(dir).arg("--yes").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();

    stdin
        .write_all(b"What documentation tools can you use?\n")
        .await
        .unwrap();
    read_until_all(
        &mut stderr,
        &[
            "[hook] PostToolUse: list_mcp",
            "Starting an MCP server",
            "[mcp] connected docs (course-docs",
            "[mcp] tool pool rebuilt: 9 MCP tools",
        ],
        &mut seen,
    )
    .await;
    stdin
        .write_all(b"Search the docs for the worktree cleanup policy.\n")
        .await
        .unwrap();
    read_until_all(
        &mut stderr,
        &["[hook] PostToolUse: mcp__docs__search_docs returned output"],
        &mut seen,
    )
    .await;
    stdin.write_all(b"Delete the deploy doc.\n").await.unwrap();
    read_until_all(
        &mut stderr,
        &[
            "MCP tool its server marks destructive",
            "[hook] PostToolUse: mcp__docs__delete_doc returned output",
        ],
        &mut seen,
    )
    .await;
    let pid_line = seen.clone();
    drop(stdin);
    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the demo exits at end of input")
        .unwrap();
    assert!(output.status.success(), "{seen}");
    assert!(!pid_line.contains("failed to connect"), "{seen}");
    // The server's standard error went to its log, not to the terminal.
    assert!(dir.join(".mcp_logs/docs.log").exists());
}
