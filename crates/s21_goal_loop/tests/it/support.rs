//! How this lesson's tests build its agent and run its binary. The
//! mechanism modules use only what is here and `lesson::…`, so they stay
//! the same from lesson to lesson while this file follows the lesson.

// Not every lesson's tests use every piece of the wiring.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use shared::CancellationToken;
use shared::agent::{Agent, TurnError, TurnOutcome};
use shared::cli::Setup;
use shared::model::Model;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::Message;
use shared::testing::Recorder;
use shared::tools::Workspace;

/// The tools this lesson offers, in the order it offers them.
pub const TOOLS: &[&str] = &[
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "todo_write",
    "compact",
    "load_skill",
    "task",
    "create_task",
    "list_tasks",
    "get_task",
    "claim_task",
    "complete_task",
    "schedule_cron",
    "list_crons",
    "cancel_cron",
    "spawn_teammate",
    "send_message",
    "list_teammates",
    "request_shutdown",
    "review_plan",
    "create_worktree",
    "list_worktrees",
    "remove_worktree",
    "keep_worktree",
    "Workflow",
    "connect_mcp",
    "list_mcp",
];

/// The model id every test agent asks for.
pub const MODEL_ID: &str = "test";

/// The options the mechanism tests build with: every question answered
/// yes (the permission tests choose their own approver), the course's
/// skills, the defaults otherwise.
pub fn options() -> lesson::Options {
    lesson::Options {
        approver: Box::new(lesson::permission::ApproveAll),
        // The course's own skills, wherever the test runs.
        skills: lesson::SkillsArgs {
            skills_dir: Some(course_skills()),
        },
        ..lesson::Options::default()
    }
}

/// The course's `skills/` directory.
pub fn course_skills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills")
}

/// A setup working in `dir` with `model`.
pub fn setup(dir: &Path, model: Arc<dyn Model>) -> Setup {
    Setup::new(Workspace::new(dir).unwrap(), model, MODEL_ID)
}

/// The lesson's agent in `dir`, thinking with `model`, built with `options`.
pub fn agent_with(
    dir: &Path,
    model: Arc<dyn Model>,
    options: lesson::Options,
) -> Agent<lesson::LessonHooks> {
    lesson::build(setup(dir, model), options).unwrap()
}

/// The lesson's agent in `dir` with [`options`], and the scripted model
/// that plays `replies` for it.
pub fn agent(dir: &Path, replies: Vec<Reply>) -> (Agent<lesson::LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    (agent_with(dir, model.clone(), options()), model)
}

/// Runs one turn of `prompt`, and returns how it ended and what it showed.
pub async fn turn(
    agent: &mut Agent<lesson::LessonHooks>,
    history: &mut Vec<Message>,
    prompt: &str,
) -> (Result<TurnOutcome, TurnError>, Recorder) {
    let mut recorder = Recorder::default();
    let outcome = agent
        .run_turn(history, prompt, &mut recorder, &CancellationToken::new())
        .await;
    (outcome, recorder)
}

/// One turn of `prompt` in `dir` with a scripted model playing `replies`:
/// the history it left, and the model (to read the requests back).
pub async fn run(dir: &Path, replies: Vec<Reply>) -> (Vec<Message>, Arc<ScriptedModel>) {
    let (mut agent, model) = agent(dir, replies);
    let mut history = Vec::new();
    let (outcome, _) = turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    (history, model)
}

/// The lesson's binary, to run in `dir`: with `--workdir dir`, a clean
/// environment (only `PATH`, so no key or model variable of the developer
/// leaks in) and every stream piped.
pub fn binary(dir: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(crate::BIN);
    command
        .arg("--workdir")
        .arg(dir)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs [`binary`] with `args`, `vars` and `input` on standard input, and
/// waits for it.
pub async fn run_binary(
    dir: &Path,
    args: &[&str],
    vars: &[(&str, &str)],
    input: &str,
) -> std::process::Output {
    use tokio::io::AsyncWriteExt;
    let mut command = binary(dir);
    command.args(args);
    for (name, value) in vars {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("the lesson binary starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child
        .wait_with_output()
        .await
        .expect("the lesson binary runs")
}

/// Whether the heavy tests (the 300-turn session, the 2,000-case property
/// test) run at full size here: in the lesson that introduced them and in
/// the newest lesson; the lessons between run them smaller.
pub const FULL_SIZE: bool = true;

/// `full` at full size, else a tenth of it (at least one).
pub fn size(full: usize) -> usize {
    if FULL_SIZE { full } else { (full / 10).max(1) }
}

/// The variable that makes this test binary run as the course's example
/// MCP server (see `mcp::example_server_entry`).
pub const SERVE_EXAMPLE_ENV: &str = "S21_SERVE_EXAMPLE_MCP_SERVER";

/// How to start the course's example MCP server: this very test binary,
/// running only the test that serves, with the variable that makes it
/// serve. What libtest prints on standard output around it ("running 1
/// test") is not JSON, and MCP clients skip lines that are not.
pub fn example_server() -> lesson::mcp::ServerConfig {
    let exe = std::env::current_exe().unwrap();
    let mut config = lesson::mcp::ServerConfig::new(
        exe.to_string_lossy(),
        [
            "mcp::example_server_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ],
    );
    config
        .env
        .insert(SERVE_EXAMPLE_ENV.to_string(), "1".to_string());
    config
}

/// How to start the npm package `@modelcontextprotocol/<package>` that
/// `npm ci` installed in `examples/mcp_server/npm`, with `args`; `None`,
/// saying why, when node or the package is missing.
pub fn npm_server(package: &str, args: &[&str]) -> Option<lesson::mcp::ServerConfig> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/mcp_server/npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !node || !script.is_file() {
        let why = format!(
            "{} is missing (run `npm ci --prefix examples/mcp_server/npm`; node found: {node})",
            script.display()
        );
        // Under CI a missing server is a broken setup, not a reason to pass.
        if std::env::var("CI").is_ok_and(|ci| !ci.is_empty()) {
            panic!("CI is set and {why}");
        }
        // Straight to standard error: the test harness captures `println!`
        // and `eprintln!`, and a skip must be seen.
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED {package}: {why}");
        return None;
    }
    let mut all = vec![script.to_string_lossy().into_owned()];
    all.extend(args.iter().map(|arg| arg.to_string()));
    Some(lesson::mcp::ServerConfig::new("node", all))
}

/// The variable that makes this test binary run one workflow in the
/// directory it names, as a process of its own that a test can kill (see
/// `workflow::runner_entry`).
pub const WORKFLOW_RUNNER_ENV: &str = "S20_WORKFLOW_RUNNER";

/// How to start this test binary as that workflow runner, in `dir`: only
/// the test that runs it, with the variable set.
pub fn workflow_runner(dir: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "workflow::runner_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(WORKFLOW_RUNNER_ENV, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}
