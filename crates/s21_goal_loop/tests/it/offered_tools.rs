//! The tools the lesson offers the model, exactly as it sends them: each
//! tool's name, description and input schema, snapshotted. The book's
//! generated "what changed" pages list the tools from this snapshot
//! (`cargo xtask docs` reads `snapshots/it__offered_tools__tools.snap`), so
//! what a page says a lesson offers is what the lesson really sends.
//!
//! Every later lesson runs this module unchanged; what differs from lesson
//! to lesson is the snapshot and `support::TOOLS`.

use serde_json::Value;
use shared::model::scripted::Reply;

use crate::support;

/// The tools of the first request of a turn, without prompt-cache markers:
/// lesson 10 marks the last tool for caching, which is a mark on the
/// request, not part of the tool.
async fn offered_tools() -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(dir.path(), vec![Reply::text("done")]);
    let mut history = Vec::new();
    let (outcome, _) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let requests = model.requests();
    let mut tools = requests[0]["tools"]
        .as_array()
        .expect("the request offers a list of tools")
        .clone();
    for tool in &mut tools {
        if let Some(fields) = tool.as_object_mut() {
            fields.remove("cache_control");
        }
    }
    tools
}

#[tokio::test]
async fn the_lesson_offers_its_tools_with_their_descriptions_and_schemas() {
    let tools = offered_tools().await;
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().expect("every tool has a name"))
        .collect();
    assert_eq!(names, support::TOOLS);
    insta::assert_json_snapshot!("tools", tools);
}
