//! The dispatch map (lesson 2), driven through the real loop by a scripted
//! model: which tools are offered, how each `tool_use` reaches its handler
//! by name, what an unknown tool or bad input returns, and how a program
//! adds a tool of its own, whose handler gets the call's context.

use serde_json::{Value, json};
use shared::history::validate;
use shared::hooks::ToolOutput;
use shared::model::scripted::Reply;
use shared::protocol::{Message, ToolSpec};
use shared::tools::Workspace;

use crate::support::{self, TOOLS};

/// The (text, is_error) of each tool result in `message`.
fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .tool_results()
        .map(|result| (result.text(), result.is_error))
        .collect()
}

/// The names of the tools a request offered, in order.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn offers_the_lesson_s_tools_in_registration_order() {
    let dir = tempfile::tempdir().unwrap();
    let (_, model) = support::run(dir.path(), vec![Reply::text("hi")]).await;

    let request = &model.requests()[0];
    assert_eq!(offered(request), TOOLS);
    // Each one tells the model what it does and what input it takes.
    for tool in request["tools"].as_array().unwrap() {
        assert!(!tool["description"].as_str().unwrap().is_empty(), "{tool}");
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
    }
}

#[tokio::test]
async fn calls_in_one_reply_run_in_order_through_the_map() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = support::run(
        dir.path(),
        vec![
            Reply::tool(
                "write_file",
                json!({"path": "notes/a.txt", "content": "alpha beta"}),
            )
            .and_tool(
                "edit_file",
                json!({"path": "notes/a.txt", "old_text": "beta", "new_text": "gamma"}),
            )
            .and_tool("read_file", json!({"path": "notes/a.txt"}))
            .and_tool("glob", json!({"pattern": "**/*.txt"})),
            Reply::text("done"),
        ],
    )
    .await;

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert_eq!(results.len(), 4);
    assert!(results.iter().all(|(_, is_error)| !is_error), "{results:?}");
    // The read saw the edit, so the calls ran in the order written.
    assert_eq!(results[2].0, "alpha gamma");
    assert_eq!(results[3].0.trim_end(), "notes/a.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/a.txt")).unwrap(),
        "alpha gamma"
    );
}

#[tokio::test]
async fn unknown_tools_and_escaping_paths_are_errors_the_model_sees() {
    let dir = tempfile::tempdir().unwrap();
    let (history, model) = support::run(
        dir.path(),
        vec![
            Reply::tool("delete_everything", json!({}))
                .and_tool("read_file", json!({"path": "../../etc/passwd"}))
                .and_tool("write_file", json!({"path": "x.txt"})),
            Reply::text("ok"),
        ],
    )
    .await;

    validate(&history).unwrap();
    let results = results(&history[2]);
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|(_, is_error)| *is_error), "{results:?}");
    // The unknown name is refused with the list of names that do exist.
    assert!(
        results[0].0.starts_with("Unknown tool: delete_everything."),
        "{}",
        results[0].0
    );
    for name in TOOLS {
        assert!(results[0].0.contains(name), "{name}: {}", results[0].0);
    }
    assert!(
        results[1].0.contains("escapes the workspace"),
        "{}",
        results[1].0
    );
    // The missing field is named, so the model can fix its call.
    assert!(results[2].0.contains("content"), "{}", results[2].0);
    assert!(!dir.path().join("x.txt").exists());
    // And the loop went on: the errors were sent back to the model.
    let sent = &model.requests()[1]["messages"][2]["content"];
    assert_eq!(sent.as_array().unwrap().len(), 3);
    assert!(sent[0]["is_error"].as_bool().unwrap(), "{sent}");
}

#[tokio::test]
async fn a_tool_registered_by_a_program_is_offered_and_gets_the_workspace_in_its_context() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            Reply::tool("note", json!({"text": "remember the milk"})),
            Reply::text("noted"),
        ],
    );
    // One spec and one handler. The handler captures nothing: where to
    // write comes with each call, in its context.
    agent.hooks_mut().tool_registry().register(
        ToolSpec::new(
            "note",
            "Saves a short note in the workspace.",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            }),
        ),
        |input, cx: lesson::dispatch::ToolContext| async move {
            let Some(text) = input["text"].as_str() else {
                return ToolOutput::error("note needs a `text` string");
            };
            match cx.workspace.resolve("note.txt") {
                Ok(path) => match std::fs::write(path, text) {
                    Ok(()) => ToolOutput::ok(format!("noted in {}", cx.workspace.root().display())),
                    Err(error) => ToolOutput::error(error.to_string()),
                },
                Err(error) => ToolOutput::error(error.to_string()),
            }
        },
    );
    let mut history = Vec::new();

    let (outcome, _) = support::turn(&mut agent, &mut history, "take a note").await;

    outcome.unwrap();
    // Offered after the lesson's own tools, in registration order.
    let mut expected: Vec<&str> = TOOLS.to_vec();
    expected.push("note");
    assert_eq!(offered(&model.requests()[0]), expected);
    // Dispatched by name, with the agent's own workspace in the context.
    validate(&history).unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    assert_eq!(
        results(&history[2]),
        [(format!("noted in {}", workspace.root().display()), false)]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("note.txt")).unwrap(),
        "remember the milk"
    );
}

#[tokio::test]
async fn an_unregistered_tool_is_no_longer_offered_or_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            Reply::tool("glob", json!({"pattern": "*.txt"})),
            Reply::text("ok"),
        ],
    );
    assert!(agent.hooks_mut().tool_registry().unregister("glob"));
    assert!(
        !agent.hooks_mut().tool_registry().unregister("glob"),
        "only once"
    );
    let mut history = Vec::new();

    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;

    outcome.unwrap();
    let expected: Vec<&str> = TOOLS
        .iter()
        .copied()
        .filter(|name| *name != "glob")
        .collect();
    assert_eq!(offered(&model.requests()[0]), expected);
    validate(&history).unwrap();
    let results = results(&history[2]);
    assert!(results[0].1);
    assert!(
        results[0].0.starts_with("Unknown tool: glob."),
        "{}",
        results[0].0
    );
}
