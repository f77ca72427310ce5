//! The memory layer through the real loop, driven by a scripted model: the
//! index in the system prompt, recall at the start of a turn (read with the
//! conversation before the prompt), extraction at its end, consolidation at
//! ten files (oldest memories first), each with its failure paths, the
//! `memory` notices that report them, and a preference that survives into
//! a new process of the lesson binary.
//!
//! Memory's three side queries offer the model no tools, so the scripted
//! model keeps them apart from the turn: they never take one of the turn's
//! replies, [`SideRule`]s answer them (else `[]`, "nothing"), and
//! `model.side_requests()` reads them back. Each script below therefore
//! holds only the turn's own replies.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use lesson::LessonHooks;
use lesson::memory::recall::MAX_CONTEXT_CHARS;
use lesson::memory::{Clock, Memory, MemoryStore, MemoryType};
use serde_json::{Value, json};
use shared::agent::{Agent, TurnError};
use shared::history::validate;
use shared::hooks::PromptCheck;
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel, SideRule};
use shared::protocol::{ContentBlock, Message, Role, ToolResult, ToolUse};
use shared::testing::{FakeResponse, FakeServer, Recorder, anthropic_stream};

use crate::support;

/// Text only the recall side query's prompt holds.
const RECALL: &str = "Which of these saved memories are relevant";
/// Text only the extraction side query's prompt holds.
const EXTRACT: &str = "extract what is worth";
/// Text only the consolidation side query's prompt holds.
const CONSOLIDATE: &str = "Consolidate them";

/// The lesson's agent in `dir`, playing `replies` for its turns and
/// answering side queries by `rules`.
fn agent(
    dir: &Path,
    replies: Vec<Reply>,
    rules: Vec<SideRule>,
) -> (Agent<LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies).with_side_rules(rules));
    let agent = support::agent_with(dir, model.clone(), support::options());
    (agent, model)
}

/// Runs one turn that must complete, checks the history's pairing, and
/// returns what the turn showed.
async fn turn(
    agent: &mut Agent<LessonHooks>,
    history: &mut Vec<Message>,
    prompt: &str,
) -> Recorder {
    let (outcome, recorder) = support::turn(agent, history, prompt).await;
    outcome.unwrap();
    validate(history).unwrap();
    recorder
}

/// One turn in a fresh agent; every scripted reply must be used.
async fn one_turn(
    dir: &Path,
    prompt: &str,
    replies: Vec<Reply>,
    rules: Vec<SideRule>,
) -> (Vec<Message>, Arc<ScriptedModel>, Recorder) {
    let (mut agent, model) = agent(dir, replies, rules);
    let mut history = Vec::new();
    let recorder = turn(&mut agent, &mut history, prompt).await;
    assert_eq!(model.remaining(), 0, "every scripted reply was used");
    (history, model, recorder)
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

/// The single prompt a side query sent. A side query offers no tools,
/// asks the agent's own model, and carries one message of its own.
fn side_prompt(request: &Value) -> String {
    assert!(request.get("tools").is_none(), "{request}");
    assert_eq!(request["model"], support::MODEL_ID);
    assert_eq!(request["messages"].as_array().unwrap().len(), 1);
    request["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Which of memory's side queries a request is.
fn kind(request: &Value) -> &'static str {
    let prompt = side_prompt(request);
    if prompt.starts_with(RECALL) {
        "recall"
    } else if prompt.contains(EXTRACT) {
        "extract"
    } else if prompt.contains(CONSOLIDATE) {
        "consolidate"
    } else {
        panic!("not a memory side query: {prompt}")
    }
}

/// The side queries the model received, by kind, in order.
fn side_kinds(model: &ScriptedModel) -> Vec<&'static str> {
    model.side_requests().iter().map(kind).collect()
}

/// The side query prompts of one kind, in order.
fn side_prompts(model: &ScriptedModel, wanted: &str) -> Vec<String> {
    model
        .side_requests()
        .iter()
        .filter(|request| kind(request) == wanted)
        .map(side_prompt)
        .collect()
}

/// The whole system prompt of a request, its blocks a blank line apart.
/// Lessons differ in how they cut the prompt into blocks (lesson 10 joins
/// its sections into one cached block), never in this text.
fn system_text(request: &Value) -> String {
    request["system"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .map(|block| block["text"].as_str().unwrap())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default()
}

/// The memory section of a request's system prompt, if it has one: the
/// paragraph that starts with its heading (it holds no blank line).
fn memory_section(request: &Value) -> Option<String> {
    let text = system_text(request);
    let sections: Vec<&str> = text
        .split("\n\n")
        .filter(|section| section.starts_with("# Memory\n"))
        .collect();
    assert!(sections.len() <= 1, "{sections:?}");
    sections.first().map(|section| section.to_string())
}

/// The messages of a request, checked against the pairing rules.
fn messages(request: &Value) -> Vec<Message> {
    let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
    validate(&messages).unwrap();
    messages
}

/// The text blocks of the request's last message, which is the user's.
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

// --- Extraction, the index and recall -----------------------------------

#[tokio::test]
async fn a_stated_preference_is_extracted_then_indexed_and_recalled_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![Reply::text("Noted."), Reply::text("Using tabs.")],
        vec![
            // Turn 1's extraction finds the preference; turn 2's, nothing.
            SideRule::new(EXTRACT, Reply::text(format!("Found one:\n{}", tabs_json()))).times(1),
            SideRule::new(RECALL, Reply::text("[\"user-prefers-tabs\"]")),
        ],
    );
    let mut history = Vec::new();

    let shown = turn(&mut agent, &mut history, "I prefer tabs over spaces.").await;

    // An empty store asks no recall query and adds nothing to the system
    // prompt or to the prompt's message.
    assert_eq!(side_kinds(&model), ["extract"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(memory_section(&requests[0]), None);
    assert_eq!(last_texts(&requests[0]), ["I prefer tabs over spaces."]);
    let extraction = &side_prompts(&model, "extract")[0];
    assert!(
        extraction.contains("User: I prefer tabs over spaces."),
        "{extraction}"
    );
    assert!(extraction.contains("Assistant: Noted."), "{extraction}");
    assert!(
        extraction.contains("Existing memories:\n(none yet)"),
        "{extraction}"
    );
    assert_eq!(
        shown.notices_tagged("memory"),
        ["extracted 1 new memory: user-prefers-tabs"]
    );
    let saved = store(dir.path()).read("user-prefers-tabs").unwrap();
    assert_eq!(saved.memory, tabs());

    let shown = turn(&mut agent, &mut history, "Write a hello world script.").await;

    assert_eq!(side_kinds(&model), ["extract", "recall", "extract"]);
    let recall = &side_prompts(&model, "recall")[0];
    assert!(recall.contains("Write a hello world script."), "{recall}");
    assert!(
        recall
            .contains("- user-prefers-tabs (user): User prefers tabs over spaces for indentation"),
        "{recall}"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // The same system prompt as in turn 1, with the memory section added
    // at its end.
    let section = memory_section(&requests[1]).unwrap();
    assert!(section.contains(TABS_LINE), "{section}");
    assert_eq!(
        system_text(&requests[1]),
        format!("{}\n\n{section}", system_text(&requests[0]))
    );
    let texts = last_texts(&requests[1]);
    assert_eq!(texts.len(), 2);
    assert_eq!(texts[0], "Write a hello world script.");
    assert!(texts[1].starts_with("<memories>"), "{}", texts[1]);
    assert!(
        texts[1].contains("Indent with tabs, never spaces."),
        "{}",
        texts[1]
    );
    assert_eq!(
        shown.notices_tagged("memory"),
        ["recalled user-prefers-tabs"]
    );
    // Nothing new: still one memory.
    assert_eq!(store(dir.path()).list().len(), 1);
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn recall_loads_only_the_memories_the_side_query_names() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs(), auth(), deploy()]);

    let (history, model, shown) = one_turn(
        dir.path(),
        "Ship the release.",
        vec![Reply::text("Shipping.")],
        vec![SideRule::new(
            RECALL,
            Reply::text("Relevant:\n```json\n[\"deploy-target\", \"no-such-memory\"]\n```"),
        )],
    )
    .await;

    assert_eq!(side_kinds(&model), ["recall", "extract"]);
    let recall = &side_prompts(&model, "recall")[0];
    for name in ["user-prefers-tabs", "auth-rewrite", "deploy-target"] {
        assert!(recall.contains(name), "{recall}");
    }
    // The index lists all three; only the named one is loaded.
    let section = memory_section(&model.requests()[0]).unwrap();
    assert_eq!(section.matches("\n- ").count(), 3, "{section}");
    let blocks = memory_blocks(&history);
    assert_eq!(blocks.len(), 1);
    assert!(blocks[0].contains("ledger-prod"), "{}", blocks[0]);
    assert!(!blocks[0].contains("Indent with tabs"), "{}", blocks[0]);
    assert!(!blocks[0].contains("Legal flagged"), "{}", blocks[0]);
    assert_eq!(shown.notices_tagged("memory"), ["recalled deploy-target"]);
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
    let (history, _, shown) = one_turn(
        dir.path(),
        "everything",
        vec![Reply::text("ok")],
        vec![SideRule::new(RECALL, Reply::text(answer))],
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
    assert_eq!(
        shown.notices_tagged("memory"),
        ["recalled fact-6, fact-5, fact-4, fact-3, fact-2"]
    );
}

#[tokio::test]
async fn an_explicit_none_loads_nothing_and_does_not_fall_back() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);

    for answer in ["[]", "None."] {
        let (history, model, shown) = one_turn(
            dir.path(),
            // Keywords would match: the fallback must not run.
            "Which indentation do I prefer?",
            vec![Reply::text("ok")],
            vec![SideRule::new(RECALL, Reply::text(answer))],
        )
        .await;
        assert_eq!(side_kinds(&model), ["recall", "extract"], "{answer}");
        assert!(memory_blocks(&history).is_empty(), "{answer}");
        assert_eq!(
            last_texts(&model.requests()[0]),
            ["Which indentation do I prefer?"]
        );
        // Nothing recalled, and nothing went wrong: nothing to report.
        assert!(shown.notices_tagged("memory").is_empty(), "{answer}");
    }
}

// A failing side query is retried with backoff from lesson 11 on; paused
// time makes those waits free, and a rule with no limit fails every try.
#[tokio::test(start_paused = true)]
async fn when_the_recall_side_query_fails_keywords_choose() {
    for failure in [
        Reply::error(ScriptedError::Overloaded),
        Reply::text("I am not sure what you mean."),
        Reply::text("[\"made-up-name\"]"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        seed(dir.path(), &[tabs(), auth(), deploy()]);

        let (history, model, shown) = one_turn(
            dir.path(),
            "Which indentation do I prefer?",
            vec![Reply::text("Tabs.")],
            vec![SideRule::new(RECALL, failure.clone())],
        )
        .await;

        let blocks = memory_blocks(&history);
        assert_eq!(blocks.len(), 1, "{failure:?}");
        assert!(blocks[0].contains("Indent with tabs"), "{failure:?}");
        assert!(!blocks[0].contains("Legal flagged"), "{failure:?}");
        assert!(!blocks[0].contains("ledger-prod"), "{failure:?}");
        assert!(last_texts(&model.requests()[0])[1].starts_with("<memories>"));
        let notices = shown.notices_tagged("memory");
        assert_eq!(notices.len(), 2, "{failure:?}: {notices:?}");
        assert!(
            notices[0].starts_with("warning: memory recall side query failed (")
                && notices[0].ends_with("); matching keywords instead"),
            "{notices:?}"
        );
        assert_eq!(notices[1], "recalled by keywords: user-prefers-tabs");
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_recall_with_no_matching_keywords_loads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);

    let (history, _, shown) = one_turn(
        dir.path(),
        "What time is it?",
        vec![Reply::text("No idea.")],
        vec![SideRule::new(RECALL, Reply::error(ScriptedError::Server))],
    )
    .await;

    assert!(memory_blocks(&history).is_empty());
    let notices = shown.notices_tagged("memory");
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert_eq!(notices[1], "recalled by keywords: nothing");
}

#[tokio::test]
async fn memories_join_the_prompt_after_any_tool_results_and_only_once_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::tool("bash", json!({"command": "echo one"})),
            Reply::tool("bash", json!({"command": "echo two"})),
            Reply::text("done"),
        ],
        vec![SideRule::new(
            RECALL,
            Reply::text("[\"user-prefers-tabs\"]"),
        )],
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

    // One recall before the turn's first call, one extraction after its
    // last: none between the rounds.
    assert_eq!(side_kinds(&model), ["recall", "extract"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let sent = messages(&requests[0]);
    let last = sent.last().unwrap();
    assert!(
        matches!(
            last.content.as_slice(),
            [
                ContentBlock::ToolResult(result),
                ContentBlock::Text { text: prompt, .. },
                ContentBlock::Text { text: memories, .. },
            ] if result.tool_use_id == "toolu_old"
                && prompt == "now tabs"
                && memories.starts_with("<memories>")
        ),
        "{last:?}"
    );
    // The later calls of the turn carry the same single block.
    assert_eq!(memory_blocks(&history).len(), 1);
    for request in &requests[1..] {
        let sent = request["messages"].to_string();
        assert_eq!(sent.matches("<memories>").count(), 1, "{sent}");
    }
    // The extraction does not read the recalled block back as news.
    let extraction = &side_prompts(&model, "extract")[0];
    assert!(!extraction.contains("<memories>"), "{extraction}");
    assert!(!extraction.contains("Indent with tabs"), "{extraction}");
    assert!(extraction.contains("now tabs"), "{extraction}");
}

#[tokio::test]
async fn a_follow_up_prompt_recalls_the_memory_the_conversation_is_about() {
    let dir = tempfile::tempdir().unwrap();
    let validation = Memory::new(
        "parser-validation",
        MemoryType::Project,
        "How input validation is done in this codebase",
        "Validate at the boundary and return typed errors (memory-body-77).",
    );
    seed(dir.path(), &[tabs(), validation]);
    let (mut agent, model) = agent(
        dir.path(),
        vec![
            Reply::text("Added validation to the parser."),
            Reply::text("Done for the lexer too."),
        ],
        // Only a recall question that shows the first prompt as the
        // conversation before the latest one names the memory. (Rules
        // match the request as JSON, where a newline is `\n`.)
        vec![SideRule::new(
            "(its end):\\nUser: Add input validation to the parser module.",
            Reply::text("[\"parser-validation\"]"),
        )],
    );
    let mut history = Vec::new();
    turn(
        &mut agent,
        &mut history,
        "Add input validation to the parser module.",
    )
    .await;

    // Not one of its words is in a memory's name or description.
    let shown = turn(
        &mut agent,
        &mut history,
        "Do the same for the other module.",
    )
    .await;

    assert_eq!(
        side_kinds(&model),
        ["recall", "extract", "recall", "extract"]
    );
    let recalls = side_prompts(&model, "recall");
    // The session's first request has no conversation before it.
    assert!(
        !recalls[0].contains("Conversation before"),
        "{}",
        recalls[0]
    );
    // The follow-up is asked about with the exchange before it, and the
    // latest prompt marked as such.
    assert!(
        recalls[1].contains(
            "Conversation before the latest request (its end):\n\
             User: Add input validation to the parser module.\n\n\
             Assistant: Added validation to the parser.\n\n\
             Latest request:\nDo the same for the other module.\n\nMemories:\n"
        ),
        "{}",
        recalls[1]
    );
    assert_eq!(
        shown.notices_tagged("memory"),
        ["recalled parser-validation"]
    );
    let texts = last_texts(&model.requests()[1]);
    assert_eq!(texts[0], "Do the same for the other module.");
    assert!(texts[1].contains("memory-body-77"), "{}", texts[1]);
}

#[tokio::test]
async fn the_conversation_recall_is_shown_is_bounded_and_leaves_recalled_memories_out() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);
    let prompts = [
        "FIRST-MARKER".to_string(),
        format!("SECOND-START {}", "word ".repeat(3_000)),
        format!("THIRD-START {}", "word ".repeat(3_000)),
        "FOURTH-MARKER".to_string(),
        "What next?".to_string(),
    ];
    let replies = (1..=prompts.len())
        .map(|n| Reply::text(format!("Reply {n}.")))
        .collect();
    let (mut agent, model) = agent(
        dir.path(),
        replies,
        vec![SideRule::new(
            RECALL,
            Reply::text("[\"user-prefers-tabs\"]"),
        )],
    );
    let mut history = Vec::new();
    for prompt in &prompts {
        turn(&mut agent, &mut history, prompt).await;
    }

    let recalls = side_prompts(&model, "recall");
    assert_eq!(recalls.len(), prompts.len());
    let last = recalls.last().unwrap();
    let start = last.find("(its end):\n").unwrap() + "(its end):\n".len();
    let end = last.find("\n\nLatest request:\nWhat next?\n").unwrap();
    let conversation = &last[start..end];
    // Cut from the front: the end of the conversation is what the latest
    // prompt follows.
    assert!(conversation.starts_with('…'), "{conversation}");
    assert!(
        conversation.chars().count() <= MAX_CONTEXT_CHARS + 1,
        "{}",
        conversation.chars().count()
    );
    assert!(
        conversation.ends_with("User: FOURTH-MARKER\n\nAssistant: Reply 4."),
        "{conversation}"
    );
    assert!(!conversation.contains("FIRST-MARKER"), "{conversation}");
    // The memory recalled in every turn is not shown back as conversation.
    assert!(!conversation.contains("<memories>"), "{conversation}");
    assert!(!conversation.contains("Indent with tabs"), "{conversation}");
    // However long the session, the question stays small.
    assert!(last.chars().count() < 4_000, "{}", last.chars().count());
}

// --- What memory is told the user said ----------------------------------

#[tokio::test]
async fn memory_recalls_for_the_prompt_as_sent_and_never_sees_a_blocked_one() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[tabs()]);
    let (mut agent, model) = agent(
        dir.path(),
        vec![Reply::text("Tabs it is."), Reply::text("Hello.")],
        vec![],
    );
    // A UserPromptSubmit hook that expands a shorthand and refuses prompts
    // that hold a secret.
    agent
        .hooks_mut()
        .registry()
        .on_user_prompt_submit(|prompt: &str| {
            if prompt.contains("SECRET") {
                Some(PromptCheck::Block("no secrets, please".into()))
            } else if prompt == "indent?" {
                Some(PromptCheck::Replace(
                    "How should I indent the new files?".into(),
                ))
            } else {
                None
            }
        });
    let mut history = Vec::new();

    turn(&mut agent, &mut history, "indent?").await;

    // The recall side query asked about the prompt the model was sent, not
    // the shorthand the user typed.
    let recall = &side_prompts(&model, "recall")[0];
    assert!(
        recall.contains("Latest request:\nHow should I indent the new files?\n"),
        "{recall}"
    );
    assert!(!recall.contains("indent?\n"), "{recall}");
    assert_eq!(
        last_texts(&model.requests()[0])[0],
        "How should I indent the new files?"
    );

    // A blocked prompt ends the turn before any model call, side queries
    // included …
    let before = model.side_requests().len();
    let (outcome, _) = support::turn(&mut agent, &mut history, "my SECRET is hunter2").await;
    assert!(
        matches!(outcome, Err(TurnError::PromptBlocked(_))),
        "{outcome:?}"
    );
    assert_eq!(model.side_requests().len(), before);
    assert_eq!(model.requests().len(), 1);
    // … and is not remembered for later either: when the loop runs again
    // without a new prompt (as after an interrupted turn), there is no
    // pending prompt to recall for.
    history.push(Message::user_text("hello"));
    agent
        .run_loop(
            &mut history,
            &mut Recorder::default(),
            &shared::CancellationToken::new(),
        )
        .await
        .unwrap();
    validate(&history).unwrap();
    let after: Vec<&'static str> = model.side_requests()[before..].iter().map(kind).collect();
    assert_eq!(after, ["extract"]);
    for request in model.side_requests() {
        assert!(!request.to_string().contains("hunter2"), "{request}");
    }
    assert_eq!(model.remaining(), 0);
}

// --- Extraction ----------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn extraction_that_finds_nothing_or_fails_writes_nothing() {
    for (answer, warning) in [
        (Reply::text("[]"), None),
        (
            Reply::text("Nothing worth keeping here."),
            Some("warning: no memories extracted: the extraction answer could not be read: "),
        ),
        (
            Reply::error(ScriptedError::Overloaded),
            Some("warning: no memories extracted: the extraction side query failed: "),
        ),
        (
            Reply::text("[{\"name\": \"x\", \"type\": \"opinion\", \"body\": \"b\"}]"),
            Some("warning: extraction proposed an invalid memory (x: type must be one of "),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();

        let (history, model, shown) = one_turn(
            dir.path(),
            "hi",
            vec![Reply::text("Hello.")],
            vec![SideRule::new(EXTRACT, answer.clone())],
        )
        .await;

        // The turn ends as the model ended it.
        assert_eq!(history.last().unwrap().text(), "Hello.", "{answer:?}");
        assert_eq!(model.requests().len(), 1);
        assert!(!dir.path().join(".memory").exists(), "{answer:?}");
        let notices = shown.notices_tagged("memory");
        match warning {
            None => assert!(notices.is_empty(), "{notices:?}"),
            Some(start) => {
                assert_eq!(notices.len(), 1, "{notices:?}");
                assert!(notices[0].starts_with(start), "{notices:?}");
            }
        }
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

    let (_, model, shown) = one_turn(
        dir.path(),
        "Remember: tabs, not spaces.",
        vec![Reply::text("I already know.")],
        vec![
            SideRule::new(RECALL, Reply::text("[\"user-prefers-tabs\"]")),
            SideRule::new(EXTRACT, Reply::text(reworded.to_string())),
        ],
    )
    .await;

    let extraction = &side_prompts(&model, "extract")[0];
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
    // Recalled, and nothing extracted or updated.
    assert_eq!(
        shown.notices_tagged("memory"),
        ["recalled user-prefers-tabs"]
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

    let (_, _, shown) = one_turn(
        &workspace,
        "hi",
        vec![Reply::text("Hello.")],
        vec![SideRule::new(EXTRACT, Reply::text(answer.to_string()))],
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
    let notices = shown.notices_tagged("memory");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("extracted 3 new memories: etc-passwd, memory-"),
        "{notices:?}"
    );
}

// --- Consolidation -------------------------------------------------------

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

/// An extraction answer with one new memory.
fn tenth() -> SideRule {
    let answer = json!([{"name": "fact-9", "type": "reference", "description": "Fact number 9",
            "body": "The body of fact 9."}]);
    SideRule::new(EXTRACT, Reply::text(answer.to_string()))
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

    let (_, model, shown) = one_turn(
        dir.path(),
        "one more thing",
        vec![Reply::text("Noted.")],
        vec![
            tenth(),
            SideRule::new(CONSOLIDATE, Reply::text(merged.to_string())),
        ],
    )
    .await;

    assert_eq!(side_kinds(&model), ["recall", "extract", "consolidate"]);
    let consolidation = &side_prompts(&model, "consolidate")[0];
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
    assert_eq!(
        shown.notices_tagged("memory"),
        [
            "extracted 1 new memory: fact-9",
            "consolidated 10 memories into 3"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn consolidation_sees_the_memories_oldest_first_and_the_merge_keeps_that_order() {
    let dir = tempfile::tempdir().unwrap();
    // The nine written in reverse name order, a day apart from
    // 2020-01-01T00:00:00Z: fact-8 is the oldest, fact-0 the newest.
    let days = Arc::new(AtomicU64::new(0));
    let clock = Clock::new(move || {
        let day = days.fetch_add(1, Ordering::SeqCst);
        UNIX_EPOCH + Duration::from_secs(1_577_836_800 + 86_400 * day)
    });
    let dated = store(dir.path()).with_clock(clock);
    for memory in nine().iter().rev() {
        dated.write(memory).unwrap();
    }

    // The tenth, extracted now, is the newest of all. The consolidation
    // side query's answer (the default `[]`) is refused, so the
    // deterministic merge runs.
    let (_, model, _) = one_turn(
        dir.path(),
        "one more thing",
        vec![Reply::text("Noted.")],
        vec![tenth()],
    )
    .await;

    let consolidation = &side_prompts(&model, "consolidate")[0];
    assert!(consolidation.contains("oldest first"), "{consolidation}");
    let at = |name: &str| {
        consolidation
            .find(&format!("\"name\": \"{name}\""))
            .unwrap_or_else(|| panic!("{name}: {consolidation}"))
    };
    let order = [8, 7, 6, 5, 4, 3, 2, 1, 0, 9].map(|n| at(&format!("fact-{n}")));
    assert!(order.is_sorted(), "{order:?}: {consolidation}");
    assert!(
        consolidation.contains("\"updated\": \"2020-01-01T00:00:00Z\""),
        "{consolidation}"
    );
    // In the merged user memories, too, the oldest statement comes first.
    let merged = store(dir.path()).read("user-memories").unwrap().memory.body;
    let position = |text: &str| merged.find(text).unwrap_or_else(|| panic!("{merged}"));
    assert!(position("The body of fact 6.") < position("The body of fact 3."));
    assert!(position("The body of fact 3.") < position("The body of fact 0."));
}

#[tokio::test]
async fn below_ten_files_there_is_no_consolidation() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &nine()[..8]);

    let (_, model, _) = one_turn(
        dir.path(),
        "one more thing",
        vec![Reply::text("Noted.")],
        vec![tenth()],
    )
    .await;

    assert_eq!(side_kinds(&model), ["recall", "extract"]);
    assert_eq!(store(dir.path()).list().len(), 9);
}

#[tokio::test(start_paused = true)]
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

        let (_, _, shown) = one_turn(
            dir.path(),
            "one more thing",
            vec![Reply::text("Noted.")],
            vec![tenth(), SideRule::new(CONSOLIDATE, failure.clone())],
        )
        .await;

        let left = store(dir.path()).list();
        assert_eq!(left.len(), 4, "{failure:?}: {left:?}");
        let text: String = left.iter().map(|s| s.memory.body.clone() + "\n").collect();
        for n in 0..10 {
            assert!(
                text.contains(&format!("The body of fact {n}.")),
                "{failure:?}: {text}"
            );
        }
        let index = fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap();
        assert_eq!(index.lines().count(), 4, "{index}");
        let notices = shown.notices_tagged("memory");
        assert_eq!(notices.len(), 3, "{failure:?}: {notices:?}");
        assert!(
            notices[1].starts_with("warning: memory consolidation side query failed (")
                && notices[1].ends_with("); merged deterministically instead"),
            "{notices:?}"
        );
        assert_eq!(notices[2], "consolidated 10 memories into 4");
    }
}

// --- The store as the agent finds it ------------------------------------

#[tokio::test]
async fn a_hand_added_memory_is_indexed_when_the_agent_starts_and_a_broken_one_reported() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".memory")).unwrap();
    fs::write(
        dir.path().join(".memory/tabs.md"),
        "---\nname: tabs\ndescription: Tabs, not spaces\ntype: user\n---\nTabs.\n",
    )
    .unwrap();
    fs::write(dir.path().join(".memory/broken.md"), "no frontmatter\n").unwrap();
    let (mut agent, model) = agent(
        dir.path(),
        vec![Reply::text("Hello."), Reply::text("Hello again.")],
        vec![],
    );

    // Building the agent brought the index in line with the files.
    assert_eq!(
        fs::read_to_string(dir.path().join(".memory/MEMORY.md")).unwrap(),
        "- tabs — Tabs, not spaces — tabs.md\n"
    );
    let mut history = Vec::new();
    let first = turn(&mut agent, &mut history, "hi").await;
    let second = turn(&mut agent, &mut history, "hi again").await;

    let section = memory_section(&model.requests()[0]).unwrap();
    assert!(
        section.contains("- tabs — Tabs, not spaces — tabs.md"),
        "{section}"
    );
    assert!(!section.contains("broken"), "{section}");
    // The broken file is reported once, in the first turn (the notice was
    // emitted while the agent was built), naming the file.
    let warnings = first.notices_tagged("memory");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("warning: skipping malformed memory file ")
            && warnings[0].contains("broken.md"),
        "{warnings:?}"
    );
    assert!(second.notices_tagged("memory").is_empty());
    assert!(dir.path().join(".memory/broken.md").is_file());
}

// --- Across processes ------------------------------------------------------

/// A streamed reply of plain text (a final answer, or a side query's).
fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn a_preference_stated_in_one_run_is_recalled_in_a_new_process() {
    let dir = tempfile::tempdir().unwrap();
    // Run 1: the turn's reply, then the extraction side query's answer.
    let extraction = json!([{
        "name": "user-prefers-tabs",
        "type": "user",
        "description": "User prefers tabs over spaces for indentation",
        "body": "Indent with tabs, never spaces (memory-body-42)."
    }]);
    let first = FakeServer::start(vec![
        text_reply("Noted: tabs."),
        text_reply(&extraction.to_string()),
    ])
    .await
    .unwrap();
    let vars = [
        ("ANTHROPIC_BASE_URL", first.url()),
        ("ANTHROPIC_API_KEY", "sk-test-key"),
    ];
    let output =
        support::run_binary(dir.path(), &["-p", "I prefer tabs over spaces"], &vars, "").await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("[memory] extracted 1 new memory: user-prefers-tabs"),
        "{stderr}"
    );
    let received = first.received();
    assert_eq!(received.len(), 2);
    // No memory yet: no memory section in the system prompt.
    let main = received[0].json();
    assert!(main.get("tools").is_some());
    assert_eq!(memory_section(&main), None);
    assert!(!system_text(&main).contains("user-prefers-tabs"));
    let extraction = received[1].json();
    assert!(extraction.get("tools").is_none());
    assert!(
        extraction["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("User: I prefer tabs over spaces"),
        "{extraction}"
    );
    assert!(dir.path().join(".memory/user-prefers-tabs.md").is_file());
    // A broken file in the store must not stop the next run.
    fs::write(
        dir.path().join(".memory/broken.md"),
        "no frontmatter here\n",
    )
    .unwrap();

    // Run 2, a new process: the recall side query, the turn, extraction.
    let second = FakeServer::start(vec![
        text_reply("[\"user-prefers-tabs\"]"),
        text_reply("I'll indent with tabs."),
        text_reply("[]"),
    ])
    .await
    .unwrap();
    let vars = [
        ("ANTHROPIC_BASE_URL", second.url()),
        ("ANTHROPIC_API_KEY", "sk-test-key"),
    ];
    let output = support::run_binary(dir.path(), &["-p", "Create hello.py"], &vars, "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("I'll indent with tabs."), "{stdout}");
    // Side queries' answers are not shown.
    assert!(!stdout.contains("user-prefers-tabs"), "{stdout}");
    assert_eq!(
        stderr
            .matches("[memory] warning: skipping malformed memory file")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("broken.md"), "{stderr}");
    assert!(
        stderr.contains("[memory] recalled user-prefers-tabs"),
        "{stderr}"
    );
    let received = second.received();
    assert_eq!(received.len(), 3);
    let recall = received[0].json();
    assert!(recall.get("tools").is_none());
    assert!(
        recall["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Latest request:\nCreate hello.py"),
        "{recall}"
    );
    let main = received[1].json();
    assert!(main.get("tools").is_some());
    // The memory section is the system prompt's last paragraph.
    let section = memory_section(&main).unwrap();
    assert!(section.contains(TABS_LINE), "{section}");
    assert!(system_text(&main).ends_with(&section));
    let messages = main["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    let content = messages[0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2);
    assert_eq!(content[0]["text"], "Create hello.py");
    let memories = content[1]["text"].as_str().unwrap();
    assert!(memories.starts_with("<memories>"), "{memories}");
    assert!(memories.contains("memory-body-42"), "{memories}");
    assert!(received[2].json().get("tools").is_none());
    // Nothing new in run 2: still the one memory (and the broken file).
    let mut files: Vec<String> = fs::read_dir(dir.path().join(".memory"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["MEMORY.md", "broken.md", "user-prefers-tabs.md"]);
}
