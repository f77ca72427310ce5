//! Black-box tests of the `bash` tool: real shells, real processes.
//!
//! Whether a process is gone is checked through `/proc`, never by timing:
//! each test command writes the pids it starts to a file, and the test
//! waits until every one of them has died.

// Helpers outside `#[test]` functions unwrap too: a failed setup should
// fail the test on the spot.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use shared::tools::bash::{self, BashOptions};
use shared::tools::{ToolOutput, Workspace};
use tempfile::TempDir;

fn workspace() -> (TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    (dir, workspace)
}

async fn run(workspace: &Workspace, command: &str) -> ToolOutput {
    bash::run(workspace, command, &BashOptions::default()).await
}

/// Whether `pid` is still running. A zombie is dead: it only waits for its
/// parent (here often init) to collect its exit status.
fn is_running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state letter follows the command name, which is in parentheses.
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    !(state.starts_with('Z') || state.starts_with('X'))
}

/// Waits until every pid has died; returns those still running after 10 s.
async fn survivors(pids: &[u32]) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|&pid| is_running(pid))
            .collect();
        if alive.is_empty() || Instant::now() > deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pids written one per line to `file`, once there are `count` of them.
async fn wait_for_pids(file: &Path, count: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            Instant::now() < deadline,
            "fewer than {count} pids in {file:?}"
        );
        if let Ok(text) = std::fs::read_to_string(file) {
            let pids: Vec<u32> = text.lines().filter_map(|line| line.parse().ok()).collect();
            if pids.len() >= count {
                return pids;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The end of a long output, for failure messages.
fn tail(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars[chars.len().saturating_sub(300)..].iter().collect()
}

/// A command whose processes never end on their own: a shell with two
/// background `sleep`s, one of them a grandchild inside a subshell, and
/// a foreground `sleep`. It records four pids in `pids`.
const IMMORTAL: &str = "sleep 1000 & echo $! >> pids; \
                        (sleep 1000 & echo $! >> pids; wait) & \
                        echo $$ >> pids; \
                        sleep 1000 & echo $! >> pids; \
                        wait";

#[tokio::test]
async fn reports_stdout_then_stderr_and_the_exit_status() {
    let (_dir, workspace) = workspace();
    let output = run(&workspace, "echo out; echo err >&2; exit 3").await;
    assert!(
        !output.is_error,
        "a non-zero exit is information: {output:?}"
    );
    assert_eq!(output.text, "out\nerr\n[exit status 3]");
}

#[tokio::test]
async fn success_is_just_the_output() {
    let (_dir, workspace) = workspace();
    assert_eq!(
        run(&workspace, "echo hello").await,
        ToolOutput::ok("hello\n")
    );
    assert_eq!(run(&workspace, "true").await, ToolOutput::ok("(no output)"));
    let failed = run(&workspace, "false").await;
    assert_eq!(failed, ToolOutput::ok("(no output)\n[exit status 1]"));
}

#[tokio::test]
async fn runs_in_the_workspace_with_stdin_closed() {
    let (_dir, workspace) = workspace();
    let output = run(&workspace, "pwd").await;
    assert_eq!(output.text.trim_end(), workspace.root().to_str().unwrap());
    // A command waiting for input gets end-of-file at once.
    let output = run(&workspace, "read answer; echo \"got [$answer]\"").await;
    assert!(output.text.starts_with("got []"), "{output:?}");
}

#[tokio::test]
async fn invalid_utf8_is_decoded_lossily() {
    let (_dir, workspace) = workspace();
    let output = run(&workspace, r"printf '\xff\xfe ok'").await;
    assert!(!output.is_error);
    assert_eq!(output.text, "\u{fffd}\u{fffd} ok");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let (dir, workspace) = workspace();
    let options = BashOptions {
        timeout: Duration::from_secs(2),
        ..BashOptions::default()
    };
    let output = bash::run(&workspace, &format!("echo begun; {IMMORTAL}"), &options).await;
    assert!(output.is_error, "{output:?}");
    assert!(output.text.starts_with("begun\n"), "{output:?}");
    assert!(output.text.contains("timed out after 2s"), "{output:?}");

    let pids = wait_for_pids(&dir.path().join("pids"), 4).await;
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test]
async fn dropping_the_future_kills_the_whole_process_group() {
    let (dir, workspace) = workspace();
    let pid_file = dir.path().join("pids");
    // What the loop does when the user cancels the turn: stop polling the
    // tool's future and drop it. Here `select!` drops it as soon as the
    // command has written its pids.
    let options = BashOptions::default();
    let running = bash::run(&workspace, IMMORTAL, &options);
    let pids = match tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            output = running => panic!("the command ended on its own: {output:?}"),
            pids = wait_for_pids(&pid_file, 4) => pids,
        }
    })
    .await
    {
        Ok(pids) => pids,
        Err(_) => panic!("the command never wrote its pids"),
    };
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test]
async fn cancelling_with_tokio_timeout_kills_the_group() {
    let (dir, workspace) = workspace();
    let command = format!("{IMMORTAL}; echo never");
    let cancelled = tokio::time::timeout(
        Duration::from_secs(3),
        bash::run(&workspace, &command, &BashOptions::default()),
    )
    .await;
    assert!(cancelled.is_err(), "the command should still be running");
    let pids = wait_for_pids(&dir.path().join("pids"), 4).await;
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test]
async fn background_processes_are_stopped_when_the_command_ends() {
    let (dir, workspace) = workspace();
    let options = BashOptions {
        timeout: Duration::from_secs(60),
        ..BashOptions::default()
    };
    // The background sleep holds stdout open; without cleanup the tool
    // would wait for it until the timeout.
    let output = bash::run(
        &workspace,
        "sleep 1000 & echo $! > pids; echo started",
        &options,
    )
    .await;
    assert_eq!(output, ToolOutput::ok("started\n"));
    let pids = wait_for_pids(&dir.path().join("pids"), 1).await;
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test]
async fn hundreds_of_megabytes_come_back_bounded() {
    let (_dir, workspace) = workspace();
    let output = run(&workspace, r"head -c 300000000 /dev/zero | tr '\0' a").await;
    assert!(!output.is_error, "{}", tail(&output.text));
    assert!(output.text.starts_with(&"a".repeat(50_000)));
    assert!(
        output.text.chars().count() < 50_000 + 300,
        "the text is not bounded"
    );
    assert!(
        output
            .text
            .contains("[output truncated: 998576 more characters not shown]"),
        "{}",
        tail(&output.text)
    );
    assert!(
        output
            .text
            .ends_with("[stdout was 300000000 bytes; only the first 1048576 were kept]"),
        "{}",
        tail(&output.text)
    );
}

#[tokio::test]
async fn floods_on_both_streams_do_not_deadlock() {
    let (_dir, workspace) = workspace();
    let options = BashOptions {
        timeout: Duration::from_secs(60),
        max_output_chars: 100,
        ..BashOptions::default()
    };
    // Enough to fill both pipes many times over: a tool reading one
    // stream to its end before the other would hang here.
    let command = "yes err | head -c 5000000 >&2; yes out | head -c 5000000; echo done";
    let output = bash::run(&workspace, command, &options).await;
    assert!(!output.is_error, "{output:?}");
    assert!(
        output.text.contains("[stdout was 5000005 bytes"),
        "{output:?}"
    );
    assert!(
        output.text.contains("[stderr was 5000000 bytes"),
        "{output:?}"
    );
}

#[tokio::test]
async fn multibyte_output_is_cut_on_character_boundaries() {
    let (_dir, workspace) = workspace();
    let options = BashOptions {
        max_output_chars: 10,
        ..BashOptions::default()
    };
    let output = bash::run(&workspace, "printf 'é%.0s' $(seq 25)", &options).await;
    assert_eq!(
        output.text,
        format!(
            "{}\n... [output truncated: 15 more characters not shown]",
            "é".repeat(10)
        )
    );

    // A capture limit of 7 bytes falls inside the fourth `é` (2 bytes
    // each): the half character is dropped, not shown as U+FFFD.
    let options = BashOptions {
        capture_limit_bytes: 7,
        ..BashOptions::default()
    };
    let output = bash::run(&workspace, "printf 'ééééé'", &options).await;
    assert_eq!(
        output.text,
        "ééé\n[stdout was 10 bytes; only the first 7 were kept]"
    );
}

#[tokio::test]
async fn call_parses_the_model_input() {
    let (_dir, workspace) = workspace();
    let output = bash::call(&workspace, &json!({"command": "echo hi"})).await;
    assert_eq!(output, ToolOutput::ok("hi\n"));

    let output = bash::call(&workspace, &json!({})).await;
    assert_eq!(
        output,
        ToolOutput::error("Invalid input for bash: missing field `command`")
    );
    let output = bash::call(&workspace, &json!({"command": 5})).await;
    assert!(output.is_error);
    assert!(output.text.contains("field `command`"), "{output:?}");

    let output = bash::call(&workspace, &json!({"command": "sleep 30", "timeout": 1})).await;
    assert!(output.is_error);
    assert!(output.text.contains("timed out after 1s"), "{output:?}");
}

#[test]
fn spec_names_the_fields() {
    let spec = bash::spec();
    assert_eq!(spec.name, "bash");
    assert_eq!(spec.input_schema["required"], json!(["command"]));
    assert_eq!(
        spec.input_schema["properties"]["timeout"]["type"],
        "integer"
    );
}
