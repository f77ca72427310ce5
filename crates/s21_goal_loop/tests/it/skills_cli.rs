//! Where the binary finds its skills (lesson 7): `--skills-dir`, then
//! `SKILLS_DIR` (from the environment or `.env`), then the workspace's
//! `skills/`, then the course's. Each run talks to a local fake of the
//! Anthropic API, which records the requests, so the tests read the catalog
//! the model was really sent.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use shared::testing::{FakeResponse, FakeServer, anthropic_stream};

use crate::support;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A skills directory with one skill named `name`.
fn skills_dir(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(format!("{name}-skills"));
    write(
        &dir.join(name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: The {name} skill.\n---\n{name} body\n"),
    );
    dir
}

fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

/// Runs `-p hello` in `workspace` with `args` and `vars`, against a fake
/// server answering `responses`; returns the output and the bodies of the
/// turn's requests. A spare `[]` answers a side query a later lesson may
/// ask when the turn ends; side queries offer no tools, and are left out.
async fn run(
    workspace: &Path,
    args: &[&str],
    vars: &[(&str, &str)],
    mut responses: Vec<FakeResponse>,
) -> (Output, Vec<Value>) {
    responses.push(text_reply("[]"));
    let server = FakeServer::start(responses).await.unwrap();
    let mut all_args = vec!["-p", "hello"];
    all_args.extend_from_slice(args);
    let mut all_vars = vec![
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "sk-test-key"),
    ];
    all_vars.extend_from_slice(vars);
    let output = support::run_binary(workspace, &all_args, &all_vars, "").await;
    let bodies = server
        .received()
        .iter()
        .map(|request| request.json())
        .filter(|body| body.get("tools").is_some())
        .collect();
    (output, bodies)
}

/// Every system block of a request body, joined.
fn system(body: &Value) -> String {
    body["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn ok(output: &Output) {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn the_flag_beats_the_variable_which_beats_the_workspace() {
    let root = tempfile::tempdir().unwrap();
    let flag = skills_dir(root.path(), "from-flag");
    let env = skills_dir(root.path(), "from-env");
    let workspace = root.path().join("ws");
    write(
        &workspace.join("skills/from-ws/SKILL.md"),
        "---\nname: from-ws\ndescription: The from-ws skill.\n---\nbody\n",
    );
    let flag_arg = flag.display().to_string();
    let env_var = env.display().to_string();

    let (output, bodies) = run(
        &workspace,
        &["--skills-dir", &flag_arg],
        &[("SKILLS_DIR", &env_var)],
        vec![text_reply("ok")],
    )
    .await;
    ok(&output);
    let catalog = system(&bodies[0]);
    assert!(
        catalog.contains("- from-flag: The from-flag skill."),
        "{catalog}"
    );
    assert!(
        !catalog.contains("from-env") && !catalog.contains("from-ws"),
        "{catalog}"
    );

    let (output, bodies) = run(
        &workspace,
        &[],
        &[("SKILLS_DIR", &env_var)],
        vec![text_reply("ok")],
    )
    .await;
    ok(&output);
    let catalog = system(&bodies[0]);
    assert!(
        catalog.contains("- from-env: The from-env skill."),
        "{catalog}"
    );
    assert!(!catalog.contains("from-ws"), "{catalog}");

    let (output, bodies) = run(&workspace, &[], &[], vec![text_reply("ok")]).await;
    ok(&output);
    let catalog = system(&bodies[0]);
    assert!(
        catalog.contains("- from-ws: The from-ws skill."),
        "{catalog}"
    );
}

#[tokio::test]
async fn skills_dir_in_dotenv_is_honoured() {
    let root = tempfile::tempdir().unwrap();
    let env = skills_dir(root.path(), "from-dotenv");
    let workspace = root.path().join("ws");
    write(
        &workspace.join(".env"),
        &format!("SKILLS_DIR={}\n", env.display()),
    );

    let (output, bodies) = run(&workspace, &[], &[], vec![text_reply("ok")]).await;

    ok(&output);
    let catalog = system(&bodies[0]);
    assert!(
        catalog.contains("- from-dotenv: The from-dotenv skill."),
        "{catalog}"
    );
}

#[tokio::test]
async fn a_missing_skills_dir_fails_before_any_request() {
    let root = tempfile::tempdir().unwrap();

    let (output, bodies) = run(root.path(), &["--skills-dir", "no/such/dir"], &[], vec![]).await;

    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: the skills directory no/such/dir"),
        "{stderr}"
    );
    assert!(bodies.is_empty());
}

#[tokio::test]
async fn a_broken_skill_is_one_notice_and_the_rest_still_load() {
    let root = tempfile::tempdir().unwrap();
    let dir = skills_dir(root.path(), "good");
    write(&dir.join("broken/SKILL.md"), "---\nname: broken\n---\n");
    let dir_arg = dir.display().to_string();

    let (output, bodies) = run(
        root.path(),
        &["--skills-dir", &dir_arg],
        &[],
        vec![text_reply("ok")],
    )
    .await;

    ok(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("[skills] "))
        .collect();
    assert_eq!(notices.len(), 1, "{stderr}");
    assert!(
        notices[0].starts_with("[skills] warning: skipping skill ")
            && notices[0].contains("broken/SKILL.md")
            && notices[0].contains("missing field `description`"),
        "{stderr}"
    );
    let catalog = system(&bodies[0]);
    assert!(catalog.contains("- good: The good skill."), "{catalog}");
    assert!(!catalog.contains("broken"), "{catalog}");
}

#[tokio::test]
async fn from_the_repo_root_and_from_an_empty_dir_the_course_skills_are_offered() {
    let repo_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let empty = tempfile::tempdir().unwrap();

    for workspace in [repo_root.as_path(), empty.path()] {
        let (output, bodies) = run(workspace, &[], &[], vec![text_reply("ok")]).await;
        ok(&output);
        let catalog = system(&bodies[0]);
        for name in [
            "agent-builder",
            "code-review",
            "mcp-builder",
            "writing-tests",
        ] {
            assert!(
                catalog.contains(&format!("- {name}: ")),
                "{name}: {catalog}"
            );
        }
        let tools: Vec<&str> = bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, support::TOOLS);
    }
}

#[tokio::test]
async fn a_loaded_skill_goes_back_to_the_model_as_a_tool_result() {
    let root = tempfile::tempdir().unwrap();
    let dir = skills_dir(root.path(), "alpha");
    let dir_arg = dir.display().to_string();
    let responses = vec![
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "tool_use", "id": "toolu_1", "name": "load_skill", "input": {"name": "alpha"}}),
            ],
            "tool_use",
        )),
        text_reply("loaded"),
    ];

    let (output, bodies) = run(root.path(), &["--skills-dir", &dir_arg], &[], responses).await;

    ok(&output);
    assert_eq!(bodies.len(), 2);
    let result = &bodies[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert!(
        result["content"].as_str().unwrap().contains("alpha body"),
        "{result}"
    );
    assert!(
        result.get("is_error").is_none_or(|flag| flag == false),
        "{result}"
    );
}
