//! The settings file (lesson 19): parsing and every refusal with its
//! message, which value wins, permission rules in front of the gate, and
//! command hooks run as real subprocesses; then the binary: `--settings`,
//! `/status`, `/help`, a bad file refused, and one binary behaving
//! differently under two files.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lesson::Settings;
use lesson::compact::CompactConfig;
use lesson::permission::ScriptedApprover;
use lesson::recovery::RecoveryPolicy;
use lesson::settings::{HookEvent, SettingsError, Verdict};
use serde_json::{Value, json};
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{Message, ToolUse};
use shared::testing::{FakeResponse, FakeServer, Recorder, anthropic_stream};
use shared::tools::Workspace;

use crate::support;

/// Where the binary looks for settings by default, as the errors name it.
const DEFAULT_FILE: &str = ".agent/settings.toml";

fn parse(text: &str) -> Result<Settings, SettingsError> {
    Settings::parse(text, Path::new(DEFAULT_FILE))
}

/// The message a settings file is refused with.
fn refusal(text: &str) -> String {
    parse(text).expect_err("the file is refused").to_string()
}

/// The example settings file of the course, with every section.
fn example_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/settings/settings.toml")
}

/// (text, is_error) of the tool results in `history`, in order.
fn results(history: &[Message]) -> Vec<(String, bool)> {
    history
        .iter()
        .flat_map(Message::tool_results)
        .map(|result| (result.text(), result.is_error))
        .collect()
}

/// One turn of `replies` in `dir` under `settings`, asking `approver`:
/// the valid history, and what the observer saw.
async fn turn_with(
    dir: &Path,
    settings: Settings,
    approver: ScriptedApprover,
    replies: Vec<Reply>,
    prompt: &str,
) -> (Vec<Message>, Recorder) {
    let model = Arc::new(ScriptedModel::new(replies));
    let options = lesson::Options {
        approver: Box::new(approver),
        settings,
        ..support::options()
    };
    let mut agent = support::agent_with(dir, model, options);
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, prompt).await;
    outcome.unwrap();
    validate(&history).unwrap();
    (history, recorder)
}

async fn turn(dir: &Path, settings: Settings, replies: Vec<Reply>) -> (Vec<Message>, Recorder) {
    turn_with(dir, settings, ScriptedApprover::new([]), replies, "go").await
}

fn notices(recorder: &Recorder) -> String {
    recorder.notices_tagged("hook").join("\n")
}

// ---------------------------------------------------------------- parsing

#[test]
fn the_example_file_with_every_section_is_accepted() {
    let settings = Settings::load(&example_file()).unwrap();
    assert_eq!(settings.model.id.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(settings.model.fallback.as_deref(), Some("claude-haiku-4-5"));
    assert!(settings.model.provider.is_some());
    assert!(!settings.permissions.allow.is_empty());
    assert!(!settings.permissions.ask.is_empty());
    assert!(!settings.permissions.deny.is_empty());
    for event in HookEvent::ALL {
        assert!(
            settings.hooks.iter().any(|hook| hook.event == event),
            "the example has a {} hook",
            event.name()
        );
    }
    assert!(settings.mcp_servers.contains_key("docs"));
    // `[skills] dir` is commented out: it must name a directory that exists.
    assert!(settings.skills_dir.is_none());
    assert!(settings.compaction.threshold_tokens.is_some());
    assert!(settings.recovery.max_attempts.is_some());
    assert!(settings.teams.lease_secs.is_some());
    // Every number in it is one the config types accept.
    settings.compact_config(|_| None).unwrap();
    settings.recovery_policy(|_| None).unwrap();
}

#[test]
fn no_file_means_the_defaults_of_every_earlier_lesson() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::find(None, dir.path()).unwrap();
    assert_eq!(settings.path, None);
    assert!(settings.permissions.is_empty());
    assert!(settings.hooks.is_empty());
    assert_eq!(
        settings.compact_config(|_| None).unwrap(),
        CompactConfig::default()
    );
    assert_eq!(
        settings.recovery_policy(|_| None).unwrap(),
        RecoveryPolicy::default()
    );
    let empty = parse("").unwrap();
    assert_eq!(
        empty.compact_config(|_| None).unwrap(),
        CompactConfig::default()
    );
}

#[test]
fn the_default_file_is_found_in_the_workspace_and_a_named_one_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".agent")).unwrap();
    std::fs::write(
        dir.path().join(DEFAULT_FILE),
        "[skills]\ndir = \"my-skills\"\n",
    )
    .unwrap();
    let found = Settings::find(None, dir.path()).unwrap();
    assert_eq!(found.path, Some(dir.path().join(DEFAULT_FILE)));
    // A relative directory in the file is the workspace's.
    assert_eq!(found.skills_dir, Some(dir.path().join("my-skills")));

    let missing = dir.path().join("nowhere.toml");
    let error = Settings::find(Some(&missing), dir.path()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: cannot read it", missing.display())),
        "{error}"
    );
}

#[test]
fn every_refusal_names_the_file_the_key_and_the_reason() {
    let cases = [
        (
            "[permissions]\nallow = [\"Read\", \"Bash(git status:*)\", \"Bash(\"]\n",
            ".agent/settings.toml: permissions.allow[2]: \"Bash(\" is not a rule: missing ')'",
        ),
        (
            "[permissions]\ndeny = [\"task(x)\"]\n",
            ".agent/settings.toml: permissions.deny[0]: \"task(x)\" is not a rule: only Bash, \
             Read, Write and Edit take a (…) part, and task is not one of them",
        ),
        (
            "[permissions]\nask = [\"Bash()\"]\n",
            ".agent/settings.toml: permissions.ask[0]: \"Bash()\" is not a rule: nothing \
             between the parentheses (write Bash alone to match every call)",
        ),
        (
            "[model]\nprovider = \"gpt\"\n",
            ".agent/settings.toml: model.provider: unknown provider `gpt`: use anthropic, \
             openai or demo",
        ),
        (
            "[compaction]\nmax_messages = 0\n",
            ".agent/settings.toml: compaction.max_messages: must be a whole number of at \
             least 1, got 0",
        ),
        (
            "[recovery]\nmax_attempts = 0\n",
            ".agent/settings.toml: recovery.max_attempts: must be at least 1, got 0",
        ),
        (
            "[teams]\nscan_first_ms = 5000\nscan_max_ms = 10\n",
            ".agent/settings.toml: teams.scan_max_ms: must be at least the first pause \
             (5000 ms), got 10",
        ),
        (
            "[[hooks.Stop]]\nmatcher = \"bash\"\ncommand = \"true\"\n",
            ".agent/settings.toml: hooks.Stop[0].matcher: Stop hooks are not about a tool, \
             so they take no matcher",
        ),
        (
            "[[hooks.PreToolUse]]\ncommand = \"true\"\n[[hooks.PreToolUse]]\ncommand = \"true\"\ntimeout_secs = 0\n",
            ".agent/settings.toml: hooks.PreToolUse[1].timeout_secs: must be from 1 to 600, got 0",
        ),
        (
            "[[hooks.PostToolUse]]\ncommand = \"  \"\n",
            ".agent/settings.toml: hooks.PostToolUse[0].command: is empty",
        ),
        (
            "[[hooks.PreToolUse]]\nmatcher = \"bash|\"\ncommand = \"true\"\n",
            ".agent/settings.toml: hooks.PreToolUse[0].matcher: no tool name",
        ),
        (
            "[mcp_servers.a__b]\ncommand = \"x\"\n",
            ".agent/settings.toml: mcp_servers.a__b: \"a__b\" is not a server name: `__` \
             separates the server from the tool in mcp__<server>__<tool>",
        ),
        (
            "[mcp_servers.docs]\ncommand = \"\"\n",
            ".agent/settings.toml: mcp_servers.docs: `command` is empty",
        ),
        (
            "[mcp_servers.docs]\ncommand = \"x\"\ntype = \"sse\"\n",
            ".agent/settings.toml: mcp_servers.docs: transport `sse` (the protocol's old \
             HTTP+SSE transport) is not supported; use `\"type\": \"http\"` (Streamable HTTP) \
             with the server's MCP endpoint",
        ),
        (
            "[mcp_servers.docs]\ntype = \"http\"\n",
            ".agent/settings.toml: mcp_servers.docs: an http server needs a `url`",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(refusal(text), expected, "for the file:\n{text}");
    }
}

#[test]
fn a_misspelt_key_or_broken_toml_is_refused_with_its_line_and_column() {
    for (text, expected) in [
        ("[model]\nmodle = \"x\"\n", "unknown field `modle`"),
        ("[hook]\n", "unknown field `hook`"),
        (
            "[[hooks.PreToolUs]]\ncommand = \"true\"\n",
            "unknown field `PreToolUs`",
        ),
        ("[compaction]\nmax_messages = -1\n", "invalid value"),
        ("[mcp_servers.docs]\nurl = 3\n", "invalid type"),
        ("model = [\n", "line 1, column"),
    ] {
        let message = refusal(text);
        assert!(message.starts_with(".agent/settings.toml: "), "{message}");
        assert!(message.contains(expected), "{text:?}: {message}");
        assert!(
            message.contains("line "),
            "{text:?} keeps the line: {message}"
        );
    }
}

// ---------------------------------------------------------------- precedence

#[test]
fn the_environment_wins_over_the_file_and_the_file_over_the_defaults() {
    let settings = parse(
        "[model]\nfallback = \"file-fallback\"\n\
         [compaction]\nthreshold_tokens = 1234\nmax_messages = 40\n\
         [recovery]\nbase_delay_ms = 7\nmax_attempts = 2\n\
         [skills]\ndir = \"/from/file\"\n\
         [teams]\nlease_secs = 60\n",
    )
    .unwrap();
    let env = |name: &str| match name {
        "COMPACT_THRESHOLD_TOKENS" => Some("999".to_string()),
        "FALLBACK_MODEL_ID" => Some("env-fallback".to_string()),
        _ => None,
    };
    let compact = settings.compact_config(env).unwrap();
    assert_eq!(compact.threshold_tokens, 999, "the environment wins");
    assert_eq!(
        compact.max_messages, 40,
        "the file, where the environment is silent"
    );
    assert_eq!(
        compact.snip_to_messages,
        CompactConfig::default().snip_to_messages
    );
    let recovery = settings.recovery_policy(env).unwrap();
    assert_eq!(recovery.fallback_model.as_deref(), Some("env-fallback"));
    assert_eq!(recovery.base_delay, Duration::from_millis(7));
    assert_eq!(recovery.max_attempts, 2);
    let silent = settings.recovery_policy(|_| None).unwrap();
    assert_eq!(silent.fallback_model.as_deref(), Some("file-fallback"));
    assert_eq!(settings.autonomy().lease, Duration::from_secs(60));

    // Skills: the flag, then the variable, then the file.
    let no_flag = lesson::SkillsArgs::default();
    let flag = lesson::SkillsArgs {
        skills_dir: Some("/from/flag".into()),
    };
    let skills_env = |name: &str| (name == "SKILLS_DIR").then(|| "/from/env".to_string());
    assert_eq!(
        settings.skills(&flag, skills_env).skills_dir,
        Some("/from/flag".into())
    );
    assert_eq!(
        settings.skills(&no_flag, skills_env).skills_dir,
        Some("/from/env".into())
    );
    assert_eq!(
        settings.skills(&no_flag, |_| None).skills_dir,
        Some("/from/file".into())
    );
}

// ---------------------------------------------------------------- permission rules

fn bash(command: &str) -> Reply {
    Reply::tool("bash", json!({ "command": command }))
}

#[tokio::test]
async fn a_deny_rule_blocks_a_call_that_is_otherwise_allowed() {
    let replies = || vec![bash("echo made > made.txt"), Reply::text("done")];
    // Without settings the call runs.
    let free = tempfile::tempdir().unwrap();
    let (history, _) = turn(free.path(), Settings::default(), replies()).await;
    assert!(free.path().join("made.txt").exists());
    assert!(!results(&history)[0].1);

    let denied = tempfile::tempdir().unwrap();
    let settings = parse("[permissions]\ndeny = [\"Bash(echo:*)\"]\n").unwrap();
    let (history, _) = turn(denied.path(), settings, replies()).await;
    assert!(
        !denied.path().join("made.txt").exists(),
        "the call did not run"
    );
    let (text, is_error) = &results(&history)[0];
    assert!(is_error);
    assert!(
        text.contains("the settings rule deny Bash(echo:*)"),
        "{text}"
    );
}

#[tokio::test]
async fn an_allow_rule_spares_the_question_and_an_ask_rule_asks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.txt"), "x").unwrap();
    std::fs::write(dir.path().join("notes.md"), "# notes").unwrap();
    let settings =
        parse("[permissions]\nallow = [\"Bash(rm old.txt)\"]\nask = [\"Read(*.md)\"]\n").unwrap();
    // Nobody says yes: every question is answered no.
    let approver = ScriptedApprover::new([]);
    let replies = vec![
        bash("rm old.txt"),
        Reply::tool("read_file", json!({ "path": "notes.md" })),
        Reply::text("done"),
    ];
    let (history, _) = turn_with(dir.path(), settings, approver.clone(), replies, "go").await;
    // Lesson 3 asks before `rm `; the allow rule answered instead.
    assert!(!dir.path().join("old.txt").exists());
    let asked = approver.asked();
    assert_eq!(asked.len(), 1, "only the read was asked about: {asked:?}");
    assert_eq!(asked[0].reason, "Settings rule ask Read(*.md)");
    let results = results(&history);
    assert!(!results[0].1);
    assert!(results[1].1, "the user said no to the read");
}

#[tokio::test]
async fn no_rule_allows_what_the_deny_list_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let settings = parse("[permissions]\nallow = [\"Bash\"]\n").unwrap();
    let (history, _) = turn(
        dir.path(),
        settings,
        vec![bash("sudo touch marker"), Reply::text("done")],
    )
    .await;
    assert!(!dir.path().join("marker").exists());
    assert!(results(&history)[0].0.contains("deny list"));
}

#[test]
fn the_gate_decides_deny_then_ask_then_allow() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let settings = parse(
        "[permissions]\nallow = [\"mcp__docs__*\"]\nask = [\"mcp__docs__write\"]\ndeny = [\"mcp__docs__delete_*\"]\n",
    )
    .unwrap();
    let call = |name: &str| ToolUse {
        id: "t".into(),
        name: name.into(),
        input: json!({}),
    };
    let verdict = |name: &str| {
        settings
            .permissions
            .decide(&call(name), &workspace)
            .map(|(verdict, _)| verdict)
    };
    assert_eq!(verdict("mcp__docs__search"), Some(Verdict::Allow));
    assert_eq!(verdict("mcp__docs__write"), Some(Verdict::Ask));
    assert_eq!(verdict("mcp__docs__delete_page"), Some(Verdict::Deny));
    assert_eq!(verdict("mcp__git__log"), None);
}

// ---------------------------------------------------------------- command hooks

#[tokio::test]
async fn a_pre_tool_use_hook_reads_the_call_as_json_on_its_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let settings = parse(
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"cat > pre.json\"\n\
         [[hooks.PostToolUse]]\nmatcher = \"bash\"\ncommand = \"cat > post.json\"\n",
    )
    .unwrap();
    turn(
        dir.path(),
        settings,
        vec![
            bash("echo hello"),
            Reply::tool("glob", json!({ "pattern": "*" })),
            Reply::text("done"),
        ],
    )
    .await;
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    let pre = read("pre.json");
    assert_eq!(pre["hook_event_name"], "PreToolUse");
    assert_eq!(pre["tool_name"], "bash", "the glob call did not match");
    assert_eq!(pre["tool_input"]["command"], "echo hello");
    assert_eq!(
        Path::new(pre["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        dir.path().canonicalize().unwrap()
    );
    assert!(!pre["session_id"].as_str().unwrap().is_empty());
    let post = read("post.json");
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_response"]["output"], "hello\n");
    assert_eq!(post["tool_response"]["is_error"], false);
    assert_eq!(post["session_id"], pre["session_id"]);
}

#[tokio::test]
async fn a_rule_with_a_servers_real_name_matches_its_normalised_tools() {
    let dir = tempfile::tempdir().unwrap();
    // `my.docs` is offered as `mcp__my_docs__…`; the rule is written as the
    // user knows the server. `nodocs` is configured nowhere.
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"my.docs": {"command": "true"}}}"#,
    )
    .unwrap();
    let settings =
        parse("[permissions]\ndeny = [\"mcp__my.docs__sea?ch\", \"mcp__nodocs__*\"]\n").unwrap();
    let (history, recorder) = turn(
        dir.path(),
        settings,
        vec![
            Reply::tool("mcp__my_docs__search", json!({ "query": "x" })),
            Reply::text("done"),
        ],
    )
    .await;
    let (text, is_error) = &results(&history)[0];
    assert!(is_error);
    assert!(
        text.contains("the settings rule deny mcp__my.docs__sea?ch matches this call"),
        "{text}"
    );
    let warnings = recorder.notices_tagged("mcp").join("\n");
    assert!(
        warnings.contains(
            "the permission rule mcp__nodocs__* names an MCP server that is not configured"
        ),
        "{warnings}"
    );
    assert!(!warnings.contains("my.docs__sea?ch names"), "{warnings}");
}

#[tokio::test]
async fn exit_2_blocks_the_call_with_standard_error_as_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let settings = parse(
        "[[hooks.PreToolUse]]\nmatcher = \"write_file|edit_file\"\n\
         command = \"echo 'no writes today' >&2; exit 2\"\n",
    )
    .unwrap();
    let (history, recorder) = turn(
        dir.path(),
        settings,
        vec![
            Reply::tool("write_file", json!({ "path": "a.txt", "content": "x" })),
            bash("echo ran > b.txt"),
            Reply::text("done"),
        ],
    )
    .await;
    assert!(!dir.path().join("a.txt").exists());
    assert!(
        dir.path().join("b.txt").exists(),
        "the hook did not match bash"
    );
    let (text, is_error) = &results(&history)[0];
    assert!(is_error);
    assert!(text.contains("Blocked by a PreToolUse hook"), "{text}");
    assert!(text.contains("no writes today"), "{text}");
    assert!(notices(&recorder).contains("blocked: no writes today"));
}

#[tokio::test]
async fn a_post_tool_use_hook_exiting_2_tells_the_model_in_that_call_s_result() {
    let dir = tempfile::tempdir().unwrap();
    // A real script: it reads the event, then objects on standard error.
    let script = dir.path().join("lint.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > post.json\necho 'style: a.txt has no newline at its end' >&2\nexit 2\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings =
        parse("[[hooks.PostToolUse]]\nmatcher = \"write_file\"\ncommand = \"./lint.sh\"\n")
            .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("write_file", json!({ "path": "a.txt", "content": "x" }))
            .and_tool("bash", json!({ "command": "echo unlinted" })),
        Reply::text("done"),
    ]));
    let options = lesson::Options {
        settings,
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();

    validate(&history).unwrap();
    // The call ran: exit 2 after the fact undoes nothing.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "x"
    );
    let post: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("post.json")).unwrap())
            .unwrap();
    assert_eq!(post["tool_name"], "write_file");
    let results = results(&history);
    assert_eq!(results.len(), 2, "one result per call: {results:?}");
    let (text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    assert!(
        text.ends_with(
            "\n\n[PostToolUse hook feedback]\n./lint.sh: style: a.txt has no newline at its end"
        ),
        "{text}"
    );
    assert_eq!(results[1], ("unlinted\n".to_string(), false), "not matched");
    // What the model read in its next request: the same result, the
    // stderr in it.
    let sent = &model.requests()[1]["messages"][2]["content"];
    assert_eq!(sent.as_array().unwrap().len(), 2, "{sent}");
    assert_eq!(sent[0]["content"], text.as_str());
    assert!(notices(&recorder).contains("objected to write_file after it ran"));
}

#[tokio::test]
async fn a_json_decision_on_standard_output_blocks_too() {
    let dir = tempfile::tempdir().unwrap();
    let settings = parse(
        "[[hooks.PreToolUse]]\ncommand = '''echo '{\"decision\": \"block\", \"reason\": \"read-only day\"}' '''\n",
    )
    .unwrap();
    let (history, _) = turn(
        dir.path(),
        settings,
        vec![bash("echo ran > b.txt"), Reply::text("done")],
    )
    .await;
    assert!(!dir.path().join("b.txt").exists());
    assert!(results(&history)[0].0.contains("read-only day"));
}

#[tokio::test]
async fn a_failing_or_slow_hook_is_reported_and_the_call_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let settings = parse(
        "[[hooks.PreToolUse]]\ncommand = \"echo broken >&2; exit 1\"\n\
         [[hooks.PreToolUse]]\ncommand = \"sleep 30\"\ntimeout_secs = 1\n",
    )
    .unwrap();
    let (history, recorder) = turn(
        dir.path(),
        settings,
        vec![bash("echo ran > b.txt"), Reply::text("done")],
    )
    .await;
    assert!(dir.path().join("b.txt").exists());
    assert!(!results(&history)[0].1);
    let notices = notices(&recorder);
    assert!(
        notices.contains("(echo broken >&2; exit 1) failed (exit 1): broken; going on"),
        "{notices}"
    );
    assert!(
        notices.contains("(sleep 30) was still running after 1 s and was stopped"),
        "{notices}"
    );
}

#[tokio::test]
async fn user_prompt_submit_hooks_add_context_or_block_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let settings = parse(
        "[[hooks.UserPromptSubmit]]\ncommand = \"grep -q secret && { echo 'no secrets' >&2; exit 2; }; echo '(the build is green)'\"\n",
    )
    .unwrap();
    let (history, _) = turn_with(
        dir.path(),
        settings.clone(),
        ScriptedApprover::new([]),
        vec![Reply::text("ok")],
        "how is the build?",
    )
    .await;
    assert_eq!(
        history[0].text(),
        "how is the build?\n\n(the build is green)"
    );

    let model = Arc::new(ScriptedModel::new(vec![Reply::text("never sent")]));
    let options = lesson::Options {
        settings,
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "tell me the secret").await;
    let error = outcome.unwrap_err().to_string();
    assert!(error.contains("no secrets"), "{error}");
    assert!(history.is_empty());
    assert!(model.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_stop_hook_exiting_2_sends_the_model_back_to_work() {
    let dir = tempfile::tempdir().unwrap();
    // Blocks the first stop only: the marker file remembers.
    let settings = parse(
        "[[hooks.Stop]]\ncommand = \"cat > stop.json; [ -f .stopped ] && exit 0; touch .stopped; echo 'run the tests first' >&2; exit 2\"\n",
    )
    .unwrap();
    let (history, _) = turn(
        dir.path(),
        settings,
        vec![Reply::text("all done"), Reply::text("tests pass")],
    )
    .await;
    let texts: Vec<String> = history.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        ["go", "all done", "run the tests first", "tests pass"]
    );
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("stop.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "Stop");
    assert_eq!(input["last_assistant_message"], "tests pass");
}

#[tokio::test]
async fn a_stop_hook_that_never_lets_go_still_leaves_the_turn_end_to_memory() {
    let dir = tempfile::tempdir().unwrap();
    // Always exits 2: it would send the model back forever.
    let settings = parse(
        "[[hooks.Stop]]\ncommand = \"cat > /dev/null; echo 'run the tests first' >&2; exit 2\"\n",
    )
    .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::text("done 1"),
        Reply::text("done 2"),
        Reply::text("done 3"),
        Reply::text("done 4"),
        Reply::text("never played"),
    ]));
    let options = lesson::Options {
        settings,
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    validate(&history).unwrap();

    // The hook used up the loop's continuations, and the turn ended...
    let cap = agent.limits().max_stop_continuations;
    assert_eq!(model.requests().len(), 1 + cap);
    assert_eq!(model.remaining(), 1);
    // ...with memory's extraction, once, as at any turn's end.
    let extractions = model
        .side_requests()
        .iter()
        .filter(|request| request.to_string().contains("extract what is worth"))
        .count();
    assert_eq!(extractions, 1, "memory extraction ran at the turn's end");
}

// ---------------------------------------------------------------- MCP servers

/// A settings file that configures the course's example MCP server as
/// `docs` (this test binary, serving), plus `rest`.
fn with_docs_server(rest: &str) -> Settings {
    let server = support::example_server();
    let quoted = |text: &str| format!("{text:?}");
    let args: Vec<String> = server.args.iter().map(|arg| quoted(arg)).collect();
    let env: Vec<String> = server
        .env
        .iter()
        .map(|(name, value)| format!("{name} = {}", quoted(value)))
        .collect();
    parse(&format!(
        "{rest}\n[mcp_servers.docs]\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n",
        quoted(&server.command),
        args.join(", "),
        env.join(", ")
    ))
    .unwrap()
}

#[tokio::test]
async fn a_server_of_the_settings_file_connects_and_its_rules_apply_to_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let settings = with_docs_server(
        "[permissions]\nallow = [\"connect_mcp\", \"mcp__docs\"]\ndeny = [\"mcp__docs__delete_*\"]\n",
    );
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("connect_mcp", json!({ "name": "docs" })),
        Reply::tool("mcp__docs__search_docs", json!({ "query": "worktree" })),
        Reply::tool(
            "mcp__docs__delete_doc",
            json!({ "title": "Worktree cleanup policy" }),
        ),
        Reply::text("done"),
    ]));
    // Nobody says yes: without the allow rules, connecting would be refused.
    let approver = ScriptedApprover::new([]);
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
        mcp: settings.mcp_options(|_| None).unwrap(),
        settings,
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    let status = agent.hooks().status_view();
    assert!(
        status.mcp.contains("docs [stdio]: not connected"),
        "{}",
        status.mcp
    );
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "search the docs").await;
    outcome.unwrap();
    validate(&history).unwrap();

    let results = results(&history);
    assert!(
        !results[0].1,
        "connected without a question: {}",
        results[0].0
    );
    assert!(
        results[0].0.contains("Connected to MCP server `docs`"),
        "{}",
        results[0].0
    );
    assert!(!results[1].1, "{}", results[1].0);
    assert!(
        results[1].0.contains("Worktree cleanup policy"),
        "{}",
        results[1].0
    );
    assert!(results[2].1);
    assert!(
        results[2]
            .0
            .contains("the settings rule deny mcp__docs__delete_*"),
        "{}",
        results[2].0
    );
    assert!(approver.asked().is_empty(), "{:?}", approver.asked());
    let status = agent.hooks().status_view();
    assert!(
        status.mcp.contains("docs [stdio]: connected"),
        "{}",
        status.mcp
    );
    agent.finish(&mut Recorder::default()).await;
}

#[test]
fn the_servers_of_the_file_join_those_of_mcp_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"docs": {"command": "from-mcp-json"}}}"#,
    )
    .unwrap();
    let settings = parse(
        "[mcp_servers.docs]\ncommand = \"from-settings\"\n[mcp_servers.extra]\ncommand = \"x\"\n",
    )
    .unwrap();
    let hub = lesson::mcp::McpHub::new(
        dir.path(),
        shared::notice::Notices::new(),
        settings.mcp_options(|_| None).unwrap(),
    );
    assert_eq!(hub.configured(), ["docs", "extra"]);
}

// ---------------------------------------------------------------- the binary

/// Writes `text` as the workspace's default settings file.
fn write_default(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir.join(".agent")).unwrap();
    std::fs::write(dir.join(DEFAULT_FILE), text).unwrap();
}

#[tokio::test]
async fn the_binary_refuses_a_bad_settings_file_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    write_default(dir.path(), "[permissions]\nallow = [\"Bash(\"]\n");
    let output = support::run_binary(dir.path(), &["--demo", "-p", "hello"], &[], "").await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            ".agent/settings.toml: permissions.allow[0]: \"Bash(\" is not a rule: missing ')'"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("[demo model]"),
        "no model was chosen: {stderr}"
    );
    assert!(output.stdout.is_empty());

    let named = dir.path().join("other.toml");
    std::fs::write(&named, "[model]\nid = 5\n").unwrap();
    let output = support::run_binary(
        dir.path(),
        &["--demo", "--settings", named.to_str().unwrap(), "-p", "hi"],
        &[],
        "",
    )
    .await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("other.toml: TOML parse error at line 2, column 6"),
        "{stderr}"
    );
}

/// The binary pointed at a server that fails every request: any model call
/// would end the run with an error.
fn no_model(server: &FakeServer) -> [(&'static str, &str); 2] {
    [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "sk-test-key-0042"),
    ]
}

#[tokio::test]
async fn status_and_help_are_answered_without_a_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![]).await.unwrap();
    let example = example_file();
    let run = |prompt: &'static str| {
        let (dir, example, vars) = (dir.path().to_path_buf(), example.clone(), no_model(&server));
        async move {
            let args = [
                "--settings",
                example.to_str().unwrap(),
                "--provider",
                "anthropic",
                "-p",
                prompt,
            ];
            let output = support::run_binary(&dir, &args, &vars, "").await;
            assert!(
                output.status.success(),
                "{prompt}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        }
    };
    let status = run("/status").await;
    for expected in [
        "model:       claude-sonnet-4-5 (anthropic), fallback claude-haiku-4-5",
        &format!("settings:    {}", example.display()),
        "permissions: 4 deny, 2 ask, 5 allow",
        "  deny  Bash(curl:*)",
        "  allow spawn_teammate",
        "hooks:       4 command hooks",
        "  PreToolUse       bash",
        "MCP servers: (the settings file's and .mcp.json's)",
        "  docs [stdio]: not connected",
        "summary above 50000 tokens",
        "recovery:    10 attempts",
        "teammates:   none (idle scans every 1000 ms up to 30000 ms, leases 600 s)",
        "background:  0 running",
        "cron:        0 jobs",
        "task board:  0 pending, 0 in progress, 0 completed",
        "worktrees:   ",
    ] {
        assert!(
            status.contains(expected),
            "missing {expected:?} in\n{status}"
        );
    }
    let help = run("/help").await;
    assert!(help.contains("/status") && help.contains("/help"), "{help}");
    let unknown = run("/stauts").await;
    assert!(unknown.starts_with("Unknown command /stauts."), "{unknown}");
    assert!(unknown.contains("/status"), "{unknown}");
    assert!(server.received().is_empty(), "no request reached the model");
}

#[tokio::test]
async fn a_line_starting_with_a_path_reaches_the_model_and_help_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let done = json!({"type": "text", "text": "the log says the disk is full"});
    let mut replies = vec![FakeResponse::sse_body(anthropic_stream(
        &[done],
        "end_turn",
    ))];
    // Harmless answers to side queries after the turn (lesson 9).
    replies.extend((0..4).map(|_| {
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "[]"})],
            "end_turn",
        ))
    }));
    let server = FakeServer::start(replies).await.unwrap();
    let run = |prompt: &'static str| {
        let (dir, vars) = (dir.path().to_path_buf(), no_model(&server));
        async move {
            let output = support::run_binary(&dir, &["-p", prompt], &vars, "").await;
            assert!(
                output.status.success(),
                "{prompt}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        }
    };
    let help = run("/help").await;
    assert!(help.contains("/status"), "{help}");
    assert!(server.received().is_empty(), "/help is the harness's");

    let answer = run("/tmp/x.log why?").await;
    assert!(answer.contains("the disk is full"), "{answer}");
    let first = server.received()[0].json();
    assert_eq!(
        first["messages"][0]["content"][0]["text"], "/tmp/x.log why?",
        "the line reached the model as typed"
    );
}

/// A fake model that asks for one `bash` call, then ends its turn.
async fn model_that_runs(command: &str) -> FakeServer {
    let call =
        json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": command}});
    let done = json!({"type": "text", "text": "done"});
    let mut replies = vec![
        FakeResponse::sse_body(anthropic_stream(&[call], "tool_use")),
        FakeResponse::sse_body(anthropic_stream(&[done], "end_turn")),
    ];
    // Harmless answers to side queries after the turn (lesson 9).
    replies.extend((0..4).map(|_| {
        FakeResponse::sse_body(anthropic_stream(
            &[json!({"type": "text", "text": "[]"})],
            "end_turn",
        ))
    }));
    FakeServer::start(replies).await.unwrap()
}

#[tokio::test]
async fn one_binary_behaves_differently_under_two_settings_files() {
    let run = |settings: &'static str| async move {
        let dir = tempfile::tempdir().unwrap();
        let server = model_that_runs("echo made > made.txt").await;
        let file = dir.path().join("settings.toml");
        std::fs::write(&file, settings).unwrap();
        let output = support::run_binary(
            dir.path(),
            &["--settings", file.to_str().unwrap(), "-p", "make the file"],
            &no_model(&server),
            "",
        )
        .await;
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let made = dir.path().join("made.txt").exists();
        (made, String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (made, _) = run("[permissions]\nallow = [\"Bash(echo:*)\"]\n").await;
    assert!(made, "allowed: the command ran");
    let (made, _) = run("[permissions]\ndeny = [\"Bash(echo:*)\"]\n").await;
    assert!(!made, "denied by the file: the command did not run");
    let (made, stderr) = run(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"echo 'hooks say no' >&2; exit 2\"\n",
    )
    .await;
    assert!(!made, "blocked by the file's hook");
    assert!(stderr.contains("hooks say no"), "{stderr}");
}
