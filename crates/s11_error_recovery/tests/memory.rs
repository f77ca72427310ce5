//! The memory layer through the real loop, driven by a scripted model.
//!
//! The scripted model answers every request in order, side queries
//! included, so each script below interleaves them as the harness sends
//! them: the recall query (only when the store has memories) before the
//! turn's first call, the turn's own replies, then the extraction query
//! and, when a new file brings the store to ten, the consolidation query.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;
use std::sync::Arc;

use s11_error_recovery::LessonHooks;
use s11_error_recovery::memory::{Memory, MemoryStore, MemoryType};
use s11_error_recovery::permission::ApproveAll;
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Silent};
use shared::cli::Setup;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel};
use shared::protocol::{ContentBlock, Message, Role, ToolResult, ToolUse};
use shared::tools::Workspace;

fn agent(dir: &Path, replies: Vec<Reply>) -> (Agent<LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    let agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model: model.clone(),
            model_id: "test-model".into(),
        },
        Box::new(ApproveAll),
    )
    .unwrap();
    (agent, model)
}

async fn turn(agent: &mut Agent<LessonHooks>, history: &mut Vec<Message>, prompt: &str) {
    agent
        .run_turn(history, prompt, &mut Silent, &CancellationToken::new())
        .await
        .unwrap();
    validate(history).unwrap();
}

/// Runs one turn in a fresh agent and checks every reply was used.
async fn one_turn(dir: &Path, prompt: &str, replies: Vec<Reply>) -> (Vec<Message>, Vec<Value>) {
    let (mut agent, model) = agent(dir, replies);
    let mut history = Vec::new();
    turn(&mut agent, &mut history, prompt).await;
    assert_eq!(model.remaining(), 0, "every scripted reply was used");
    (history, model.requests())
}

fn store(dir: &Path) -> MemoryStore {
    MemoryStore::at(dir.join(".memory"))
}

fn tabs() -> Memory {
    Memory::new(
        "user-prefers-tabs",
        MemoryType::User,
        "User prefers tabs over spaces for indentation",
        "Indent with tabs, never spaces.",
    )
}

fn auth() -> Memory {
    Memory::new(
        "auth-rewrite",
        MemoryType::Project,
        "The auth rewrite is driven by compliance",
        "Legal flagged the session tokens; scope follows their list.",
    )
}

fn deploy() -> Memory {
    Memory::new(
        "deploy-target",
        MemoryType::Reference,
        "Where deployments go",
        "Production deploys go to fly.io, app name ledger-prod.",
    )
}

fn seed(dir: &Path, memories: &[Memory]) {
    for memory in memories {
        store(dir).write(memory).unwrap();
    }
}

fn tabs_json() -> String {
    json!([{
        "name": "user-prefers-tabs",
        "type": "user",
        "description": "User prefers tabs over spaces for indentation",
        "body": "Indent with tabs, never spaces."
    }])
    .to_string()
}

/// Side queries offer no tools; the agent's own requests always do.
fn is_side_query(request: &Value) -> bool {
    request.get("tools").is_none()
}

/// The single prompt a side query sent.
fn side_prompt(request: &Value) -> String {
    assert!(is_side_query(request));
    assert_eq!(request["messages"].as_array().unwrap().len(), 1);
    assert_eq!(request["model"], "test-model");
    request["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The system prompt blocks of a request, as text.
fn system(request: &Value) -> Vec<String> {
    request["system"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .map(|block| block["text"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The memory section of a request's system prompt, if it has one. The
/// prompt is assembled from sections a blank line apart (the agent's
/// identity, the tools, the skill catalog, …); the memory section starts
/// with its heading and holds no blank line.
fn memory_section(request: &Value) -> Option<String> {
    let sections: Vec<String> = system(request)
        .iter()
        .flat_map(|block| block.split("\n\n"))
        .filter(|section| section.starts_with("# Memory\n"))
        .map(str::to_string)
        .collect();
    assert!(sections.len() <= 1, "{sections:?}");
    sections.into_iter().next()
}

/// The messages of a request, checked against the pairing rules.
fn messages(request: &Value) -> Vec<Message> {
    let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
    validate(&messages).unwrap();
    messages
}

/// The text blocks of the request's last message.
fn last_texts(request: &Value) -> Vec<String> {
    let messages = messages(request);
    let last = messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    last.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The `<memories>` blocks anywhere in a history.
fn memory_blocks(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } if text.starts_with("<memories>") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

const TABS_LINE: &str =
    "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md";

#[tokio::test]
async fn a_stated_preference_is_extracted_then_indexed_and_recalled_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            // Turn 1, empty store: no recall query.
            Reply::text("Noted."),
            Reply::text(format!("Found one:\n{}", tabs_json())),
            // Turn 2: recall, the turn, extraction.
            Reply::text("[\"user-prefers-tabs\"]"),
            Reply::text("Using tabs."),
            Reply::text("[]"),
        ],
    );
    let mut history = Vec::new();

    turn(&mut agent, &mut history, "I prefer tabs over spaces.").await;

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(!is_side_query(&requests[0]));
    // An empty store adds nothing to the system prompt or the prompt.
    assert_eq!(memory_section(&requests[0]), None);
    assert_eq!(last_texts(&requests[0]), ["I prefer tabs over spaces."]);
    let extraction = side_prompt(&requests[1]);
    assert!(
        extraction.contains("User: I prefer tabs over spaces."),
        "{extraction}"
    );
    assert!(extraction.contains("Assistant: Noted."), "{extraction}");
    assert!(
        extraction.contains("Existing memories:\n(none yet)"),
        "{extraction}"
    );
    let saved = store(dir.path()).read("user-prefers-tabs").unwrap();
    assert_eq!(saved.memory, tabs());

    turn(&mut agent, &mut history, "Write a hello world script.").await;

    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let recall = side_prompt(&requests[2]);
    assert!(recall.contains("Write a hello world script."), "{recall}");
    assert!(
        recall
            .contains("- user-prefers-tabs (user): User prefers tabs over spaces for indentation"),
        "{recall}"
    );
    let main = &requests[3];
    // The same system prompt as in turn 1, plus the memory section at its
    // end, in the same cached block.
    let section = memory_section(main).unwrap();
    assert!(section.contains(TABS_LINE), "{section}");
    let before = system(&requests[0]);
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(system(main), [format!("{}\n\n{section}", before[0])]);
    let texts = last_texts(main);
    assert_eq!(texts.len(), 2);
    assert_eq!(texts[0], "Write a hello world script.");
    assert!(texts[1].starts_with("<memories>"), "{}", texts[1]);
    assert!(
        texts[1].contains("Indent with tabs, never spaces."),
        "{}",
        texts[1]
    );
    // Nothing new: still one memory.
    assert_eq!(store(dir.path()).list().len(), 1);
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn recall_loads_only_the_memories_the_side_query_names() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs(), auth(), deploy()]);

    let (history, requests) = one_turn(
        dir.path(),
        "Ship the release.",
        vec![
            Reply::text("Relevant:\n```json\n[\"deploy-target\", \"no-such-memory\"]\n```"),
            Reply::text("Shipping."),
            Reply::text("[]"),
        ],
    )
    .await;

    let recall = side_prompt(&requests[0]);
    for name in ["user-prefers-tabs", "auth-rewrite", "deploy-target"] {
        assert!(recall.contains(name), "{recall}");
    }
    // The index lists all three; only the named one is loaded.
    let section = memory_section(&requests[1]).unwrap();
    assert_eq!(section.matches("\n- ").count(), 3, "{section}");
    let blocks = memory_blocks(&history);
    assert_eq!(blocks.len(), 1);
    assert!(blocks[0].contains("ledger-prod"), "{}", blocks[0]);
    assert!(!blocks[0].contains("Indent with tabs"), "{}", blocks[0]);
    assert!(!blocks[0].contains("Legal flagged"), "{}", blocks[0]);
}

#[tokio::test]
async fn one_name_per_line_is_understood_and_at_most_five_are_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let memories: Vec<Memory> = (0..7)
        .map(|n| {
            Memory::new(
                &format!("fact-{n}"),
                MemoryType::Project,
                &format!("Fact {n}"),
                &format!("Body {n}."),
            )
        })
        .collect();
    seed(dir.path(), &memories);

    let answer =
        "- fact-6\n* `fact-5.md`\n1. fact-4\n2) \"fact-3\"\nfact-2\nfact-1\nfact-0\nfact-6";
    let (history, _) = one_turn(
        dir.path(),
        "everything",
        vec![Reply::text(answer), Reply::text("ok"), Reply::text("[]")],
    )
    .await;

    let blocks = memory_blocks(&history);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].matches("\n## ").count(), 5, "{}", blocks[0]);
    // In the order the model gave.
    let six = blocks[0].find("Body 6.").unwrap();
    let two = blocks[0].find("Body 2.").unwrap();
    assert!(six < two);
    assert!(!blocks[0].contains("Body 1.") && !blocks[0].contains("Body 0."));
}

#[tokio::test]
async fn an_explicit_none_loads_nothing_and_does_not_fall_back() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);

    for answer in ["[]", "None."] {
        let (history, requests) = one_turn(
            dir.path(),
            // Keywords would match: the fallback must not run.
            "Which indentation do I prefer?",
            vec![Reply::text(answer), Reply::text("ok"), Reply::text("[]")],
        )
        .await;
        assert!(memory_blocks(&history).is_empty(), "{answer}");
        assert_eq!(last_texts(&requests[1]), ["Which indentation do I prefer?"]);
    }
}

#[tokio::test]
async fn when_the_recall_side_query_fails_keywords_choose() {
    for failure in [
        Reply::error(ScriptedError::Overloaded),
        Reply::text("I am not sure what you mean."),
        Reply::text("[\"made-up-name\"]"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        seed(dir.path(), &[tabs(), auth(), deploy()]);

        let (history, requests) = one_turn(
            dir.path(),
            "Which indentation do I prefer?",
            vec![failure.clone(), Reply::text("Tabs."), Reply::text("[]")],
        )
        .await;

        let blocks = memory_blocks(&history);
        assert_eq!(blocks.len(), 1, "{failure:?}");
        assert!(blocks[0].contains("Indent with tabs"), "{failure:?}");
        assert!(!blocks[0].contains("Legal flagged"), "{failure:?}");
        assert!(!blocks[0].contains("ledger-prod"), "{failure:?}");
        assert!(last_texts(&requests[1])[1].starts_with("<memories>"));
    }
}

#[tokio::test]
async fn a_failed_recall_with_no_matching_keywords_loads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);

    let (history, _) = one_turn(
        dir.path(),
        "What time is it?",
        vec![
            Reply::error(ScriptedError::Server),
            Reply::text("No idea."),
            Reply::text("[]"),
        ],
    )
    .await;

    assert!(memory_blocks(&history).is_empty());
}

#[tokio::test]
async fn memories_join_the_prompt_after_any_tool_results_and_only_once_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::text("[\"user-prefers-tabs\"]"),
            Reply::tool("bash", json!({"command": "echo one"})),
            Reply::tool("bash", json!({"command": "echo two"})),
            Reply::text("done"),
            Reply::text("[]"),
        ],
    );
    // A history whose last turn was cut off after its results were stored:
    // the new prompt joins that user message, after the result.
    let mut history = vec![
        Message::user_text("earlier"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                id: "toolu_old".into(),
                name: "bash".into(),
                input: json!({"command": "echo old"}),
            })],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok("toolu_old", "old"))],
        },
    ];
    validate(&history).unwrap();

    turn(&mut agent, &mut history, "now tabs").await;

    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let kinds: Vec<bool> = requests.iter().map(is_side_query).collect();
    assert_eq!(kinds, [true, false, false, false, true]);
    let sent = messages(&requests[1]);
    let last = sent.last().unwrap();
    assert!(matches!(
        last.content.as_slice(),
        [
            ContentBlock::ToolResult(result),
            ContentBlock::Text { text: prompt, .. },
            ContentBlock::Text { text: memories, .. },
        ] if result.tool_use_id == "toolu_old"
            && prompt == "now tabs"
            && memories.starts_with("<memories>")
    ));
    // The later calls of the turn carry the same single block.
    assert_eq!(memory_blocks(&history).len(), 1);
    // The extraction does not read the recalled block back as news.
    let extraction = side_prompt(&requests[4]);
    assert!(!extraction.contains("<memories>"), "{extraction}");
    assert!(!extraction.contains("Indent with tabs"), "{extraction}");
    assert!(extraction.contains("now tabs"), "{extraction}");
}

#[tokio::test]
async fn extraction_that_finds_nothing_or_fails_writes_nothing() {
    for answer in [
        Reply::text("[]"),
        Reply::text("Nothing worth keeping here."),
        Reply::error(ScriptedError::Overloaded),
        Reply::text("[{\"name\": \"x\", \"type\": \"opinion\", \"body\": \"b\"}]"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (mut agent, model) = agent(dir.path(), vec![Reply::text("Hello."), answer.clone()]);
        let mut history = Vec::new();

        let outcome = agent
            .run_turn(&mut history, "hi", &mut Silent, &CancellationToken::new())
            .await
            .unwrap();

        assert_eq!(outcome.final_text, "Hello.", "{answer:?}");
        validate(&history).unwrap();
        assert_eq!(model.requests().len(), 2);
        assert!(!dir.path().join(".memory").exists(), "{answer:?}");
    }
}

#[tokio::test]
async fn extraction_does_not_duplicate_what_is_already_saved() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);
    let before = fs::read_to_string(dir.path().join(".memory/user-prefers-tabs.md")).unwrap();
    let reworded = json!([
        {"name": "User Prefers Tabs", "type": "user",
         "description": "user prefers tabs over spaces, for indentation.",
         "body": "INDENT with tabs; never spaces"},
        {"name": "tabs-again", "type": "feedback", "description": "Tabs",
         "body": "Indent with tabs, never spaces!"}
    ]);

    let (_, requests) = one_turn(
        dir.path(),
        "Remember: tabs, not spaces.",
        vec![
            Reply::text("[\"user-prefers-tabs\"]"),
            Reply::text("I already know."),
            Reply::text(reworded.to_string()),
        ],
    )
    .await;

    let extraction = side_prompt(&requests[2]);
    assert!(
        extraction.contains(
            "Existing memories:\n- user-prefers-tabs (user): User prefers tabs over spaces for indentation"
        ),
        "{extraction}"
    );
    let files: Vec<String> = store(dir.path())
        .list()
        .into_iter()
        .map(|s| s.file)
        .collect();
    assert_eq!(files, ["user-prefers-tabs.md"]);
    assert_eq!(
        fs::read_to_string(dir.path().join(".memory/user-prefers-tabs.md")).unwrap(),
        before
    );
}

#[tokio::test]
async fn a_hostile_name_from_the_model_stays_inside_the_store() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    fs::create_dir(&workspace).unwrap();
    let answer = json!([
        {"name": "../../etc/passwd", "type": "project", "description": "d", "body": "one"},
        {"name": "..", "type": "project", "description": "d", "body": "two"},
        {"name": "a/b", "type": "project", "description": "d", "body": "three"}
    ]);

    one_turn(
        &workspace,
        "hi",
        vec![Reply::text("Hello."), Reply::text(answer.to_string())],
    )
    .await;

    let mut entries: Vec<String> = fs::read_dir(root.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    entries.sort();
    assert_eq!(entries, ["ws"]);
    let files: Vec<String> = store(&workspace)
        .list()
        .into_iter()
        .map(|s| s.file)
        .collect();
    assert_eq!(files.len(), 3);
    assert!(files.contains(&"etc-passwd.md".to_string()), "{files:?}");
    assert!(files.contains(&"a-b.md".to_string()), "{files:?}");
}

/// Nine distinct memories, one short of the threshold.
fn nine() -> Vec<Memory> {
    (0..9)
        .map(|n| {
            Memory::new(
                &format!("fact-{n}"),
                [MemoryType::User, MemoryType::Project, MemoryType::Feedback][n % 3],
                &format!("Fact number {n}"),
                &format!("The body of fact {n}."),
            )
        })
        .collect()
}

fn tenth() -> String {
    json!([{"name": "fact-9", "type": "reference", "description": "Fact number 9",
            "body": "The body of fact 9."}])
    .to_string()
}

#[tokio::test]
async fn the_tenth_file_triggers_a_consolidation_side_query() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &nine());
    let merged = json!([
        {"name": "user-facts", "type": "user", "description": "What the user said",
         "body": "Facts 0, 3 and 6."},
        {"name": "project-facts", "type": "project", "description": "The project",
         "body": "Facts 1, 4 and 7."},
        {"name": "fact-9", "type": "reference", "description": "Fact number 9",
         "body": "The body of fact 9."}
    ]);

    let (_, requests) = one_turn(
        dir.path(),
        "one more thing",
        vec![
            Reply::text("[]"),
            Reply::text("Noted."),
            Reply::text(tenth()),
            Reply::text(merged.to_string()),
        ],
    )
    .await;

    let consolidation = side_prompt(&requests[3]);
    for n in 0..10 {
        assert!(
            consolidation.contains(&format!("fact-{n}")),
            "{consolidation}"
        );
    }
    let files: Vec<String> = store(dir.path())
        .list()
        .into_iter()
        .map(|s| s.file)
        .collect();
    assert_eq!(files, ["fact-9.md", "project-facts.md", "user-facts.md"]);
    let index = fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap();
    assert_eq!(index.lines().count(), 3, "{index}");
    assert!(index.contains("- user-facts — What the user said — user-facts.md"));
}

#[tokio::test]
async fn below_ten_files_there_is_no_consolidation() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &nine()[..8]);

    // The fourth request would fail the test: the script has three replies.
    let (_, requests) = one_turn(
        dir.path(),
        "one more thing",
        vec![
            Reply::text("[]"),
            Reply::text("Noted."),
            Reply::text(tenth()),
        ],
    )
    .await;

    assert_eq!(requests.len(), 3);
    assert_eq!(store(dir.path()).list().len(), 9);
}

#[tokio::test]
async fn a_failed_consolidation_falls_back_to_a_lossless_merge() {
    for failure in [
        Reply::error(ScriptedError::Overloaded),
        Reply::text("I merged them in my head."),
        // Would delete everything.
        Reply::text("[]"),
        // One memory has no name: the answer is refused whole.
        Reply::text(
            json!([{"type": "user", "body": "x"}, {"name": "y", "type": "user", "body": "y"}])
                .to_string(),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        seed(dir.path(), &nine());

        one_turn(
            dir.path(),
            "one more thing",
            vec![
                Reply::text("[]"),
                Reply::text("Noted."),
                Reply::text(tenth()),
                failure.clone(),
            ],
        )
        .await;

        let left = store(dir.path()).list();
        assert_eq!(left.len(), 4, "{failure:?}: {left:?}");
        let text: String = left.iter().map(|s| s.memory.to_markdown()).collect();
        for n in 0..10 {
            assert!(
                text.contains(&format!("The body of fact {n}.")),
                "{failure:?}: {text}"
            );
        }
        let index = fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap();
        assert_eq!(index.lines().count(), 4, "{index}");
    }
}

#[tokio::test]
async fn a_hand_added_memory_is_indexed_when_the_agent_starts() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".memory")).unwrap();
    fs::write(
        dir.path().join(".memory/tabs.md"),
        "---\nname: tabs\ndescription: Tabs, not spaces\ntype: user\n---\nTabs.\n",
    )
    .unwrap();

    let (_, requests) = one_turn(
        dir.path(),
        "hi",
        vec![Reply::text("[]"), Reply::text("Hello."), Reply::text("[]")],
    )
    .await;

    assert_eq!(
        fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap(),
        "- tabs — Tabs, not spaces — tabs.md\n"
    );
    let section = memory_section(&requests[1]).unwrap();
    assert!(
        section.contains("- tabs — Tabs, not spaces — tabs.md"),
        "{section}"
    );
}
