//! Figures for the harness itself, not for any model.
//!
//! Run with:
//!
//! ```sh
//! cargo build --release -p s01_agent_loop
//! cargo bench -p shared --bench harness
//! ```
//!
//! It reports three numbers, described in docs/src/benchmarks.md:
//!
//! 1. per-turn overhead of the loop and the Anthropic client over a 200-turn
//!    session against a local fake server that answers at once;
//! 2. start-up time of the `s01_agent_loop` binary to its prompt (the
//!    release build, run with the demo model and an empty standard input);
//! 3. peak memory (resident set high-water mark) of a process whose `bash`
//!    tool call prints 1 GB.
//!
//! Nothing here asserts: these are measurements to read, not tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use shared::CancellationToken;
use shared::agent::{Agent, Silent};
use shared::hooks::{Hooks, ToolOutput};
use shared::model::anthropic::{AnthropicClient, AnthropicConfig};
use shared::model::config::Secret;
use shared::protocol::{ToolSpec, ToolUse};
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};
use shared::tools::{Workspace, bash};

const TURNS: usize = 200;
const STARTUP_RUNS: usize = 20;

/// Hooks with the bash tool only, like lesson 1.
struct BashOnly(Workspace);

impl Hooks for BashOnly {
    fn tools(&mut self) -> Vec<ToolSpec> {
        vec![bash::spec()]
    }

    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        bash::call(&self.0, &call.input).await
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|arg| arg == "--memory-probe") {
        memory_probe();
        return;
    }
    // `cargo bench` passes `--bench`; anything else is a filter we ignore.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!(
        "harness benchmark ({} cores)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    runtime.block_on(per_turn_overhead());
    startup_time();
    peak_memory();
}

async fn per_turn_overhead() {
    let replies = (0..TURNS)
        .map(|n| {
            FakeResponse::sse_body(anthropic_stream(
                &[json!({"type": "text", "text": format!("reply number {n}, a sentence of ordinary length.")})],
                "end_turn",
            ))
        })
        .collect();
    let server = FakeServer::start(replies).await.unwrap();
    let client = AnthropicClient::new(AnthropicConfig {
        base_url: server.url().to_string(),
        api_key: Some(Secret::new("bench")),
        ..AnthropicConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Agent::new(
        Arc::new(client),
        "bench",
        BashOnly(Workspace::new(dir.path()).unwrap()),
    );
    let mut history = Vec::new();
    let cancel = CancellationToken::new();
    let mut times = Vec::with_capacity(TURNS);
    for n in 0..TURNS {
        let start = Instant::now();
        agent
            .run_turn(&mut history, &format!("prompt {n}"), &mut Silent, &cancel)
            .await
            .unwrap();
        times.push(start.elapsed());
    }
    times.sort();
    let total: Duration = times.iter().sum();
    println!(
        "per-turn overhead, {TURNS} turns (history grows to {} messages): mean {:.2} ms, p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        history.len(),
        ms(total / TURNS as u32),
        ms(times[TURNS / 2]),
        ms(times[TURNS * 95 / 100]),
        ms(times[TURNS - 1]),
    );
}

fn startup_time() {
    let binary = workspace_root().join("target/release/s01_agent_loop");
    if !binary.exists() {
        println!("start-up time: skipped (run `cargo build --release -p s01_agent_loop` first)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut times = Vec::with_capacity(STARTUP_RUNS);
    for _ in 0..STARTUP_RUNS {
        let start = Instant::now();
        // With standard input at end of file, the REPL prints its prompt,
        // reads nothing and exits: this is the time to the prompt plus exit.
        let status = Command::new(&binary)
            .args(["--demo", "--workdir"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        times.push(start.elapsed());
        assert!(status.success());
    }
    times.sort();
    println!(
        "start-up to the prompt (release s01_agent_loop, {STARTUP_RUNS} runs): p50 {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(times[STARTUP_RUNS / 2]),
        ms(times[0]),
        ms(times[STARTUP_RUNS - 1]),
    );
}

/// Runs the 1 GB probe in a fresh process, so the high-water mark belongs
/// to the probe alone.
fn peak_memory() {
    let exe = std::env::current_exe().unwrap();
    let output = Command::new(exe).arg("--memory-probe").output().unwrap();
    print!("{}", String::from_utf8_lossy(&output.stdout));
}

fn memory_probe() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let before = high_water_kib();
    let start = Instant::now();
    let output = runtime.block_on(bash::call(
        &workspace,
        &json!({"command": "head -c 1000000000 /dev/zero | tr '\\0' x"}),
    ));
    let elapsed = start.elapsed();
    let after = high_water_kib();
    println!(
        "peak memory while bash prints 1 GB: {} MiB high-water mark ({} MiB before the call), result {} chars, took {:.1} s",
        after / 1024,
        before / 1024,
        output.text.chars().count(),
        elapsed.as_secs_f64(),
    );
}

/// `VmHWM` from /proc/self/status, in KiB (0 where /proc is missing).
fn high_water_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
