//! Lesson 7's demo, as the chapter runs it: no key, so the demo model plays
//! `demo.json` with the real `load_skill`, file tools and `bash`, and the
//! course's skills are found from an empty scratch directory. It names the
//! skills, loads code-review and its checklist, and follows them.

use std::path::Path;
use std::sync::Arc;

use lesson::skills::SkillRegistry;
use lesson::skills::discovery::COURSE_SKILLS_DIR;
use shared::history::validate;
use shared::model::scripted::{Script, ScriptedModel};

use crate::support;

/// The chapter's three prompts.
const PROMPTS: [&str; 3] = [
    "What skills are available?",
    "Load the code-review skill and follow its instructions",
    "I need to do a code review -- load the relevant skill first",
];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn the_demo_binary_loads_code_review_and_follows_it_and_runs_again() {
    let dir = tempfile::tempdir().unwrap();

    // The chapter's first command: one question, answered from the catalog.
    let output = support::run_binary(dir.path(), &["-p", PROMPTS[0]], &[], "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // The course's skills loaded without a complaint.
    assert!(!stderr.contains("[skills]"), "{stderr}");

    // Then the REPL, in the same directory, with the three prompts piped.
    let input = format!("{}\n", PROMPTS.join("\n"));
    let output = support::run_binary(dir.path(), &[], &[], &input).await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(!stderr.contains("[skills]"), "{stderr}");
    // The skill and its checklist were really loaded from the course's
    // skills/: these are the tools' results, not the script's words.
    assert!(
        stdout.contains("> load_skill: {\"name\":\"code-review\"}"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  <skill name=\"code-review\">"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  <skill-file skill=\"code-review\" file=\"references/checklist.md\">"),
        "{stdout}"
    );
    assert!(!stdout.contains("error:"), "{stdout}");
    // The review's sample file was really written, and the scan really
    // found its two risky lines.
    let sample = std::fs::read_to_string(dir.path().join("stats.rs")).unwrap();
    assert!(sample.contains("scores[scores.len() - 1]"));
    assert!(
        stdout.contains("  8:    text.lines().map(|line| line.trim().parse().unwrap()).collect()"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  14:    scores[scores.len() - 1]"),
        "{stdout}"
    );
    // Three turns, and only the second used tools.
    assert_eq!(
        stderr
            .matches("[hook] Stop: session used 5 tool calls")
            .count(),
        2,
        "{stderr}"
    );
}

#[tokio::test]
async fn the_demo_names_the_skills_of_the_catalog_it_was_sent() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::from_json(lesson::LESSON.demo_script).unwrap();
    // Strict about its length: a request past the script's end is an error.
    let model = Arc::new(ScriptedModel::new(script.replies).with_side_rules(script.side_replies));
    // Found as the binary finds them with no flag: the scratch directory
    // has no skills/, so the course's are used.
    let options = lesson::Options {
        skills: lesson::SkillsArgs::default(),
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, PROMPTS[0]).await;

    let answer = outcome.unwrap().final_text;
    assert!(recorder.notices_tagged("skills").is_empty());
    // The catalog the model received is the course's, one line per skill,
    // as its own system block after the lesson's instructions.
    let (course, warnings) = SkillRegistry::scan(Path::new(COURSE_SKILLS_DIR));
    assert!(warnings.is_empty(), "{warnings:?}");
    let request = &model.requests()[0];
    let system = request["system"].as_array().unwrap();
    assert_eq!(system.len(), 2, "{system:?}");
    assert_eq!(system[1]["text"], course.catalog());
    for skill in course.skills() {
        let line = format!("\n- {}: ", skill.name);
        assert!(
            system[1]["text"].as_str().unwrap().contains(&line),
            "{line}"
        );
        // The demo's answer names exactly the skills it was sent.
        assert!(answer.contains(&skill.name), "{}: {answer}", skill.name);
    }
    // No skill's instructions ride along in the system prompt.
    let code_review = course.get("code-review").unwrap();
    let first_line = code_review.body.lines().find(|l| l.len() > 20).unwrap();
    assert!(!request["system"].to_string().contains(first_line));

    for prompt in &PROMPTS[1..] {
        let (outcome, recorder) = support::turn(&mut agent, &mut history, prompt).await;
        outcome.unwrap();
        assert!(
            recorder.results.iter().all(|result| !result.is_error),
            "{:?}",
            recorder.results
        );
    }
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    // Level 2: the skill's text reached the model as a tool result, and it
    // was still in the history the third prompt was sent with.
    let requests = model.requests();
    let last = requests.last().unwrap();
    assert!(last["system"] == request["system"], "one catalog per run");
    let messages = last["messages"].to_string();
    assert!(
        messages.contains("<skill name=\\\"code-review\\\">"),
        "{messages}"
    );
    assert!(messages.contains(first_line), "{messages}");
    assert!(dir.path().join("stats.rs").exists());
}
