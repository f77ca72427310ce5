//! Skills (lesson 7), driven through the real loop by a scripted model: the
//! catalog in every system prompt, `load_skill` and its refusals, where the
//! skills directory is found, and broken skill files reported as `skills`
//! notices while the others load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lesson::skills::SkillRegistry;
use lesson::skills::discovery::COURSE_SKILLS_DIR;
use serde_json::{Value, json};
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::Message;
use shared::testing::Recorder;

use crate::support;

/// The notice tag of skill warnings.
const TAG: &str = "skills";

/// The course's four skills, in folder order.
const COURSE_SKILLS: [&str; 4] = [
    "agent-builder",
    "code-review",
    "mcp-builder",
    "writing-tests",
];

const ALPHA: &str = "---
name: alpha
description: |
  First line of the alpha description.
  Second line of it.
---
# Alpha

ALPHA-BODY-MARKER: do the alpha steps.
";

const BETA: &str = "---
name: beta
description: Beta does beta things.
---
BETA-BODY-MARKER
";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A skills directory with two good skills; alpha has a reference file.
fn good_skills(root: &Path) -> PathBuf {
    let skills = root.join("skills");
    write(&skills.join("alpha/SKILL.md"), ALPHA);
    write(
        &skills.join("alpha/references/notes.md"),
        "ALPHA-NOTES-MARKER\n",
    );
    write(&skills.join("beta/SKILL.md"), BETA);
    skills
}

/// The test options, with the skills in `skills_dir` (`None`: found the
/// way the binary finds them without a flag).
fn options_with(skills_dir: Option<&Path>) -> lesson::Options {
    lesson::Options {
        skills: lesson::SkillsArgs {
            skills_dir: skills_dir.map(Path::to_path_buf),
        },
        ..support::options()
    }
}

/// One turn of "go" in `workspace` with the skills in `skills_dir`, every
/// scripted reply used: the history (checked against the pairing rules),
/// the model and what the turn showed.
async fn play(
    workspace: &Path,
    skills_dir: Option<&Path>,
    replies: Vec<Reply>,
) -> (Vec<Message>, Arc<ScriptedModel>, Recorder) {
    let model = Arc::new(ScriptedModel::new(replies));
    let mut agent = support::agent_with(workspace, model.clone(), options_with(skills_dir));
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    assert_eq!(model.remaining(), 0, "every scripted reply was used");
    validate(&history).unwrap();
    (history, model, recorder)
}

/// The (text, is_error) of each tool result in `message`.
fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .tool_results()
        .map(|result| (result.text(), result.is_error))
        .collect()
}

/// Every system block of a request the model received, joined.
fn system_text(request: &Value) -> String {
    request["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn the_catalog_is_in_every_system_prompt_and_bodies_are_not() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_skills(root.path());
    let workspace = tempfile::tempdir().unwrap();

    let (_, model, recorder) = play(
        workspace.path(),
        Some(&skills),
        vec![
            Reply::tool("glob", json!({"pattern": "*"})),
            Reply::text("done"),
        ],
    )
    .await;

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let system = system_text(request);
        // The multi-line description is one catalog line.
        assert!(
            system.contains(
                "Skills available:\n\
                 - alpha: First line of the alpha description. Second line of it.\n\
                 - beta: Beta does beta things.\n\
                 Use load_skill to get full details when needed."
            ),
            "{system}"
        );
        // Level 1 only: no skill body rides along in the system prompt.
        assert!(!system.contains("BODY-MARKER"), "{system}");
    }
    // Scanned once: the same prompt for every request.
    assert_eq!(requests[0]["system"], requests[1]["system"]);
    // load_skill is offered where the lesson registers it.
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, support::TOOLS);
    assert!(names.contains(&"load_skill"));
    // Nothing was wrong with these skills, so nothing was said.
    assert!(recorder.notices_tagged(TAG).is_empty());
}

#[tokio::test]
async fn load_skill_returns_the_body_and_it_reaches_the_model() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_skills(root.path());
    let workspace = tempfile::tempdir().unwrap();

    let (history, model, _) = play(
        workspace.path(),
        Some(&skills),
        vec![
            Reply::tool("load_skill", json!({"name": "alpha"})),
            Reply::tool(
                "load_skill",
                json!({"name": "alpha", "file": "references/notes.md"}),
            ),
            Reply::text("done"),
        ],
    )
    .await;

    let (body, is_error) = &results(&history[2])[0];
    assert!(!is_error, "{body}");
    assert!(body.starts_with("<skill name=\"alpha\">"), "{body}");
    assert!(body.contains("ALPHA-BODY-MARKER"), "{body}");
    assert!(
        !body.contains("description:"),
        "the frontmatter is not repeated: {body}"
    );
    // The header says where the skill is and lists its files.
    let dir = skills.join("alpha").canonicalize().unwrap();
    assert!(body.contains(&dir.display().to_string()), "{body}");
    assert!(body.contains("- references/notes.md"), "{body}");

    let (notes, is_error) = &results(&history[4])[0];
    assert!(!is_error, "{notes}");
    assert!(notes.contains("ALPHA-NOTES-MARKER"), "{notes}");

    // The next request carries the skill text as the load_skill call's
    // tool_result.
    let requests = model.requests();
    let call = &requests[1]["messages"][1]["content"][0];
    assert_eq!(call["name"], "load_skill");
    let sent = &requests[1]["messages"][2]["content"][0];
    assert_eq!(sent["type"], "tool_result");
    assert_eq!(sent["tool_use_id"], call["id"]);
    assert!(
        sent["content"]
            .as_str()
            .unwrap()
            .contains("ALPHA-BODY-MARKER")
    );
}

#[tokio::test]
async fn paths_and_unknown_names_are_refused_with_the_list_of_skills() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_skills(root.path());
    // Things a path-based lookup would find.
    write(&root.path().join("x/SKILL.md"), "SECRET-OUTSIDE\n");
    write(&root.path().join("secret.txt"), "SECRET-OUTSIDE\n");
    let workspace = tempfile::tempdir().unwrap();
    let absolute = skills.join("alpha").display().to_string();

    let names = [
        "../x",
        absolute.as_str(),
        "/etc/passwd",
        "alpha/../../x",
        "alpha/",
        "Alpha",
        "nope",
    ];
    let mut reply = Reply::tool("load_skill", json!({"name": names[0]}));
    for name in &names[1..] {
        reply = reply.and_tool("load_skill", json!({"name": name}));
    }
    let (history, _, _) = play(
        workspace.path(),
        Some(&skills),
        vec![reply, Reply::text("ok")],
    )
    .await;

    let results = results(&history[2]);
    assert_eq!(results.len(), names.len());
    for ((text, is_error), name) in results.iter().zip(names) {
        assert!(is_error, "{name}: {text}");
        assert!(text.contains("Unknown skill"), "{name}: {text}");
        assert!(
            text.contains("Available skills: alpha, beta"),
            "{name}: {text}"
        );
        assert!(!text.contains("SECRET-OUTSIDE"), "{name}: {text}");
        assert!(!text.contains("BODY-MARKER"), "{name}: {text}");
    }
}

#[tokio::test]
async fn file_reads_only_files_the_registry_listed() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_skills(root.path());
    write(&root.path().join("secret.txt"), "SECRET-OUTSIDE\n");
    // A symlink inside the skill that leads out of it is not listed.
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        root.path().join("secret.txt"),
        skills.join("alpha/references/link.md"),
    )
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let outside = root.path().join("secret.txt").display().to_string();

    let files = [
        "../../secret.txt",
        "references/../../../secret.txt",
        outside.as_str(),
        "references/link.md",
        "SKILL.md",
        "references/missing.md",
    ];
    let mut reply = Reply::tool("load_skill", json!({"name": "alpha", "file": files[0]}));
    for file in &files[1..] {
        reply = reply.and_tool("load_skill", json!({"name": "alpha", "file": file}));
    }
    let reply = reply.and_tool("load_skill", json!({"name": "beta", "file": "notes.md"}));
    let (history, _, _) = play(
        workspace.path(),
        Some(&skills),
        vec![reply, Reply::text("ok")],
    )
    .await;

    let results = results(&history[2]);
    assert_eq!(results.len(), files.len() + 1);
    for ((text, is_error), file) in results.iter().zip(files) {
        assert!(is_error, "{file}: {text}");
        assert!(
            text.contains("Its files: references/notes.md"),
            "{file}: {text}"
        );
        assert!(!text.contains("SECRET-OUTSIDE"), "{file}: {text}");
    }
    let (beta, is_error) = results.last().unwrap();
    assert!(is_error);
    assert!(beta.contains("no files besides SKILL.md"), "{beta}");
}

#[tokio::test]
async fn bad_input_is_an_error_the_model_can_fix() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_skills(root.path());
    let workspace = tempfile::tempdir().unwrap();

    let (history, _, _) = play(
        workspace.path(),
        Some(&skills),
        vec![
            Reply::tool("load_skill", json!({})).and_tool("load_skill", json!({"name": 7})),
            Reply::text("ok"),
        ],
    )
    .await;

    let results = results(&history[2]);
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|(_, is_error)| *is_error));
    assert!(
        results[0].0.contains("missing field `name`"),
        "{}",
        results[0].0
    );
    assert!(results[1].0.contains("field `name`"), "{}", results[1].0);
}

#[tokio::test]
async fn skills_in_the_workspace_are_found_and_readable_with_read_file() {
    let workspace = tempfile::tempdir().unwrap();
    good_skills(workspace.path());

    // No directory named: the workspace's skills/ wins over the course's.
    let (history, model, _) = play(
        workspace.path(),
        None,
        vec![
            Reply::tool("load_skill", json!({"name": "alpha"})),
            Reply::tool(
                "read_file",
                json!({"path": "skills/alpha/references/notes.md"}),
            ),
            Reply::text("done"),
        ],
    )
    .await;

    let system = system_text(&model.requests()[0]);
    assert!(
        system.contains("- beta: Beta does beta things."),
        "{system}"
    );
    assert!(!system.contains("code-review"), "{system}");
    let (body, _) = &results(&history[2])[0];
    assert!(
        body.contains("or with read_file at skills/alpha/<file>"),
        "{body}"
    );
    let (notes, is_error) = &results(&history[4])[0];
    assert!(!is_error, "{notes}");
    assert_eq!(notes.trim_end(), "ALPHA-NOTES-MARKER");
}

#[tokio::test]
async fn an_empty_workspace_falls_back_to_the_course_skills() {
    let workspace = tempfile::tempdir().unwrap();

    let (_, model, _) = play(workspace.path(), None, vec![Reply::text("hi")]).await;

    let system = system_text(&model.requests()[0]);
    for name in COURSE_SKILLS {
        assert!(system.contains(&format!("- {name}: ")), "{name}: {system}");
    }
}

#[test]
fn a_missing_requested_directory_is_an_error() {
    let workspace = tempfile::tempdir().unwrap();
    let missing = workspace.path().join("no-such-skills");
    let model = Arc::new(ScriptedModel::new(vec![]));

    let result = lesson::build(
        support::setup(workspace.path(), model),
        options_with(Some(&missing)),
    );

    let error = result.err().expect("a missing skills directory is refused");
    assert!(error.to_string().contains("no-such-skills"), "{error}");
}

/// `good_skills` plus seven broken skills and a folder that is no skill.
fn good_and_broken_skills(root: &Path) -> PathBuf {
    let skills = good_skills(root);
    write(
        &skills.join("bad-yaml/SKILL.md"),
        "---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n",
    );
    // No frontmatter, and nothing to stand in for it: no line of text, or
    // a folder name that is no skill name.
    write(&skills.join("blank/SKILL.md"), "\n#\n   \n");
    write(&skills.join("no_front/SKILL.md"), "# Just markdown\n");
    write(
        &skills.join("no-desc/SKILL.md"),
        "---\nname: no-desc\n---\nbody\n",
    );
    write(
        &skills.join("no-name/SKILL.md"),
        "---\ndescription: nameless\n---\nbody\n",
    );
    write(
        &skills.join("unclosed/SKILL.md"),
        "---\nname: unclosed\ndescription: d\n",
    );
    // Sorted after alpha/, so alpha keeps the name.
    write(
        &skills.join("zz-copy/SKILL.md"),
        "---\nname: alpha\ndescription: an impostor\n---\nIMPOSTOR\n",
    );
    // Not a skill at all: no SKILL.md. Skipped without a warning.
    write(&skills.join("assets/logo.txt"), "not a skill");
    skills
}

/// Each broken folder of [`good_and_broken_skills`], in order, and what is
/// wrong with it.
const BROKEN: [(&str, &str); 7] = [
    ("bad-yaml", "bad frontmatter"),
    ("blank", "no YAML frontmatter, and no text"),
    ("no-desc", "missing field `description`"),
    ("no-name", "missing field `name`"),
    (
        "no_front",
        "the folder name \"no_front\" would be the skill's name",
    ),
    ("unclosed", "not closed"),
    ("zz-copy", "already used by"),
];

#[test]
fn broken_skills_are_reported_and_skipped_while_the_others_load() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_and_broken_skills(root.path());

    let (registry, warnings) = SkillRegistry::scan(&skills);

    let names: Vec<&str> = registry.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["alpha", "beta"]);
    assert!(
        registry
            .get("alpha")
            .unwrap()
            .body
            .contains("ALPHA-BODY-MARKER")
    );
    let report: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(report.len(), BROKEN.len(), "{report:#?}");
    for (line, (folder, problem)) in report.iter().zip(BROKEN) {
        assert!(
            line.starts_with("skipping skill ")
                && line.contains(&format!("{folder}/SKILL.md"))
                && line.contains(problem),
            "{line}"
        );
    }
}

#[tokio::test]
async fn the_agent_tells_the_user_of_each_broken_skill_and_offers_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_and_broken_skills(root.path());
    let workspace = tempfile::tempdir().unwrap();

    let (_, model, recorder) = play(workspace.path(), Some(&skills), vec![Reply::text("hi")]).await;

    // One `skills` notice per broken skill, in folder order, shown in the
    // first turn after start-up.
    let notices = recorder.notices_tagged(TAG);
    assert_eq!(notices.len(), BROKEN.len(), "{notices:#?}");
    for (notice, (folder, problem)) in notices.iter().zip(BROKEN) {
        assert!(
            notice.starts_with("warning: skipping skill ")
                && notice.contains(&format!("{folder}/SKILL.md"))
                && notice.contains(problem),
            "{notice}"
        );
    }
    // The catalog the model was sent holds the good skills only.
    let system = system_text(&model.requests()[0]);
    assert!(
        system.contains("- alpha: First line") && system.contains("- beta: Beta does"),
        "{system}"
    );
    for absent in [
        "bad-yaml", "blank", "no-desc", "no_front", "unclosed", "impostor",
    ] {
        assert!(!system.contains(absent), "{absent}: {system}");
    }
}

#[tokio::test]
async fn a_skill_without_frontmatter_is_named_by_its_folder_and_described_by_its_first_line() {
    let root = tempfile::tempdir().unwrap();
    let skills = good_skills(root.path());
    write(
        &skills.join("deploy-notes/SKILL.md"),
        "\n# How we deploy\n\nDEPLOY-BODY-MARKER: tag, then push.\n",
    );
    write(&skills.join("deploy-notes/scripts/tag.sh"), "git tag\n");
    let workspace = tempfile::tempdir().unwrap();

    let (history, model, recorder) = play(
        workspace.path(),
        Some(&skills),
        vec![
            Reply::tool("load_skill", json!({"name": "deploy-notes"})),
            Reply::text("done"),
        ],
    )
    .await;

    // In the catalog, after the skills with frontmatter, in folder order;
    // nothing to warn about.
    let system = system_text(&model.requests()[0]);
    assert!(
        system.contains(
            "- alpha: First line of the alpha description. Second line of it.\n\
             - beta: Beta does beta things.\n\
             - deploy-notes: How we deploy\n"
        ),
        "{system}"
    );
    assert!(recorder.notices_tagged(TAG).is_empty());
    // Loaded by that name: the whole file is the body, with its files.
    let (body, is_error) = &results(&history[2])[0];
    assert!(!is_error, "{body}");
    assert!(body.starts_with("<skill name=\"deploy-notes\">"), "{body}");
    assert!(
        body.contains("# How we deploy\n\nDEPLOY-BODY-MARKER"),
        "{body}"
    );
    assert!(body.contains("- scripts/tag.sh"), "{body}");
}

#[test]
fn the_course_skills_load_cleanly_and_name_only_files_they_have() {
    let (registry, warnings) = SkillRegistry::scan(Path::new(COURSE_SKILLS_DIR));

    assert!(warnings.is_empty(), "{warnings:#?}");
    let names: Vec<&str> = registry.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, COURSE_SKILLS);
    for skill in registry.skills() {
        // Every `references/…` or `scripts/…` file the instructions mention
        // is one load_skill can hand out.
        for word in skill
            .body
            .split(|c: char| c.is_whitespace() || "`()".contains(c))
        {
            let word = word.trim_end_matches(['.', ',', ':']);
            let start = word.find("references/").or_else(|| word.find("scripts/"));
            if let Some(start) = start
                && !word.ends_with('/')
            {
                let word = &word[start..];
                assert!(
                    skill.files.iter().any(|file| file == word),
                    "{} mentions {word}, which it does not have",
                    skill.name
                );
            }
        }
    }
}

#[test]
fn the_code_review_scanner_flags_panicking_rust() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("stats.rs"),
        "fn a(v: &[u32]) -> u32 {\n    v[v.len() - 1]\n}\nfn b(s: &str) -> u32 {\n    s.parse().unwrap()\n}\n",
    );
    let script = Path::new(COURSE_SKILLS_DIR).join("code-review/scripts/find_risky.sh");

    let output = std::process::Command::new("bash")
        .arg(&script)
        .arg("stats.rs")
        .current_dir(dir.path())
        .output()
        .unwrap();

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("stats.rs:2:    v[v.len() - 1]"), "{stdout}");
    assert!(
        stdout.contains("stats.rs:5:    s.parse().unwrap()"),
        "{stdout}"
    );
}
