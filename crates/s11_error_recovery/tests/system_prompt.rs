//! The assembled system prompt, driven through the real loop by a scripted
//! model: which sections it holds, when it is rebuilt, that it does not
//! change while its inputs do not, and where its cache breakpoints are.
//!
//! The scripted model answers every request in order, memory's side
//! queries included: per user prompt, the recall query (only when the store
//! holds a memory), the turn's own replies, then the extraction query.
//! Side queries carry their own system prompt and no tools, so the checks
//! below look at the agent's own requests only.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use s11_error_recovery::LessonHooks;
use s11_error_recovery::memory::{Memory, MemoryStore, MemoryType};
use s11_error_recovery::permission::ApproveAll;
use s11_error_recovery::prompt::{Outcome, PromptAssembler, PromptKey, Section, Stats, assemble};
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Silent};
use shared::cli::Setup;
use shared::history::validate;
use shared::hooks::ToolOutput;
use shared::model::scripted::{Reply, Script, ScriptedModel};
use shared::protocol::{ContentBlock, Message, ToolSpec};
use shared::tools::Workspace;

const PLANNING: &str = "plan it with todo_write";
const MEMORY: &str = "# Memory\n";
const TABS_LINE: &str =
    "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md";

/// An agent in `dir` that approves every question: these tests are about
/// the prompt, not the permission gate.
fn new_agent(dir: &Path, replies: Vec<Reply>) -> (Agent<LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    let agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model: model.clone(),
            model_id: "test".into(),
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

/// The requests the agent itself sent, without memory's side queries
/// (which offer no tools).
fn agent_requests(model: &ScriptedModel) -> Vec<Value> {
    model
        .requests()
        .into_iter()
        .filter(|request| request.get("tools").is_some())
        .collect()
}

/// The `system` field of a recorded request, as the bytes that were sent.
fn system_bytes(request: &Value) -> String {
    serde_json::to_string(&request["system"]).unwrap()
}

/// All the text of a recorded request's system prompt.
fn system_text(request: &Value) -> String {
    request["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

fn echo(word: &str) -> Reply {
    Reply::tool("bash", json!({"command": format!("echo {word}")}))
}

/// The extraction side query's answer at the end of a turn: nothing new.
fn nothing_to_extract() -> Reply {
    Reply::text("[]")
}

fn errors(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) if result.is_error => Some(result.text()),
            _ => None,
        })
        .collect()
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

// --- Which sections are there -------------------------------------------

#[tokio::test]
async fn the_first_request_holds_the_sections_in_one_block_with_one_breakpoint() {
    let dir = tempfile::tempdir().unwrap();
    // A skill of the workspace's own, so the catalog does not depend on the
    // course's skills.
    std::fs::create_dir_all(dir.path().join("skills/greeting")).unwrap();
    std::fs::write(
        dir.path().join("skills/greeting/SKILL.md"),
        "---\nname: greeting\ndescription: How to greet the user.\n---\nSay hello.\n",
    )
    .unwrap();
    let (mut agent, model) = new_agent(dir.path(), vec![Reply::text("hi"), nothing_to_extract()]);
    turn(&mut agent, &mut Vec::new(), "hello").await;

    let requests = agent_requests(&model);
    assert_eq!(requests.len(), 1);
    let root = dir.path().canonicalize().unwrap();
    let system = serde_json::to_string_pretty(&requests[0]["system"])
        .unwrap()
        .replace(&root.display().to_string(), "[WORKSPACE]");
    insta::assert_snapshot!("first_request_system", system);
    assert_eq!(
        agent.hooks.prompt().stats(),
        Stats {
            assembled: 1,
            hits: 0
        }
    );
}

#[tokio::test]
async fn the_tools_section_names_the_tools_the_model_is_offered_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let replies = (0..4)
        .flat_map(|_| [Reply::text("ok"), nothing_to_extract()])
        .collect();
    let (mut agent, model) = new_agent(dir.path(), replies);
    let mut history = Vec::new();

    turn(&mut agent, &mut history, "one").await;
    // Take todo_write away: the tools section loses it, and the planning
    // section, which would tell the model to call it, is left out.
    assert!(agent.hooks.tool_registry().unregister("todo_write"));
    turn(&mut agent, &mut history, "two").await;
    // A new tool appears in the list in its sorted place.
    agent.hooks.tool_registry().register(
        ToolSpec::new("echo_back", "Echoes its input.", json!({"type": "object"})),
        |input| async move { ToolOutput::ok(input.to_string()) },
    );
    turn(&mut agent, &mut history, "three").await;
    // Registering bash again moves it to the end of the tool specs, but the
    // set of tools is the same, so the prompt is too.
    let bash = agent.hooks.tool_registry().specs()[0].clone();
    assert_eq!(bash.name, "bash");
    agent
        .hooks
        .tool_registry()
        .register(bash, |_| async { ToolOutput::ok("") });
    turn(&mut agent, &mut history, "four").await;

    let requests = agent_requests(&model);
    assert_eq!(requests.len(), 4);
    let texts: Vec<String> = requests.iter().map(system_text).collect();
    // `task` is not in the dispatch map (the hooks run it), but the model
    // is offered it, so the section names it too.
    let all = "bash, compact, edit_file, glob, load_skill, read_file, task, todo_write, write_file";
    assert!(
        texts[0].contains(&format!("Available tools: {all}.")),
        "{}",
        texts[0]
    );
    let mut offered = tool_names(&requests[0]);
    offered.sort();
    assert_eq!(offered.join(", "), all);
    assert!(texts[0].contains(PLANNING));
    assert!(
        texts[1].contains(
            "Available tools: bash, compact, edit_file, glob, load_skill, read_file, task, write_file."
        ),
        "{}",
        texts[1]
    );
    assert!(!texts[1].contains("todo_write"), "{}", texts[1]);
    assert!(
        texts[2].contains(
            "Available tools: bash, compact, echo_back, edit_file, glob, load_skill, read_file, \
             task, write_file."
        ),
        "{}",
        texts[2]
    );
    assert_eq!(system_bytes(&requests[3]), system_bytes(&requests[2]));
    // The request's tool list did change order: bash now comes last of the
    // dispatch map's tools, just before `task`.
    let names = tool_names(&requests[3]);
    assert_eq!(names[names.len() - 2..], ["bash", "task"], "{names:?}");
    assert_eq!(
        agent.hooks.prompt().stats(),
        Stats {
            assembled: 3,
            hits: 1
        }
    );
    assert!(!agent.hooks.tool_registry().unregister("todo_write"));
}

#[tokio::test]
async fn the_memory_section_is_there_only_while_the_store_lists_a_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = new_agent(
        dir.path(),
        vec![
            // No memory, then a blank index: no recall query.
            Reply::text("ok"),
            nothing_to_extract(),
            Reply::text("ok"),
            nothing_to_extract(),
            // A memory in the store: each turn starts with the recall query.
            Reply::text("[]"),
            Reply::text("ok"),
            nothing_to_extract(),
            Reply::text("[]"),
            Reply::text("ok"),
            nothing_to_extract(),
            // The memory removed again.
            Reply::text("ok"),
            nothing_to_extract(),
        ],
    );
    let mut history = Vec::new();

    turn(&mut agent, &mut history, "no memory").await;
    std::fs::create_dir_all(dir.path().join(".memory")).unwrap();
    std::fs::write(dir.path().join(".memory/MEMORY.md"), "  \n\n").unwrap();
    turn(&mut agent, &mut history, "blank index").await;
    store(dir.path()).write(&tabs()).unwrap();
    turn(&mut agent, &mut history, "a memory").await;
    turn(&mut agent, &mut history, "the same memory").await;
    store(dir.path()).remove("user-prefers-tabs.md").unwrap();
    turn(&mut agent, &mut history, "memory gone").await;

    assert_eq!(model.remaining(), 0);
    let requests = agent_requests(&model);
    assert_eq!(requests.len(), 5);
    let texts: Vec<String> = requests.iter().map(system_text).collect();
    assert!(!texts[0].contains(MEMORY), "{}", texts[0]);
    // A blank index is an absent one: same key, so the prompt is reused.
    assert_eq!(system_bytes(&requests[1]), system_bytes(&requests[0]));
    // The memory section is the last one, after the skill catalog.
    let section = &texts[2][texts[2].find(MEMORY).unwrap()..];
    assert!(section.contains(TABS_LINE), "{section}");
    assert!(
        texts[2].starts_with(&format!("{}\n\n", texts[0])),
        "{}",
        texts[2]
    );
    assert_eq!(system_bytes(&requests[3]), system_bytes(&requests[2]));
    // With the memory gone the prompt is exactly the first one again.
    assert_eq!(system_bytes(&requests[4]), system_bytes(&requests[0]));
    assert_eq!(
        agent.hooks.prompt().stats(),
        Stats {
            assembled: 3,
            hits: 2
        }
    );
}

// --- Stability and the cache key ----------------------------------------

#[tokio::test]
async fn the_prompt_is_the_same_bytes_on_every_call_while_its_inputs_do_not_change() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path()).write(&tabs()).unwrap();
    store(dir.path())
        .write(&Memory::new(
            "deploy-target",
            MemoryType::Reference,
            "Where deployments go",
            "Production deploys go to fly.io.",
        ))
        .unwrap();
    // Turn 1: recall, eight rounds of tools, the answer, extraction.
    let mut replies = vec![Reply::text("[]")];
    replies.extend((0..8).map(|i| echo(&i.to_string())));
    replies.push(Reply::text("done"));
    replies.push(nothing_to_extract());
    // Turn 2: recall (which loads a memory into the messages, not the
    // system prompt), one round, the answer, extraction.
    replies.push(Reply::text("[\"user-prefers-tabs\"]"));
    replies.push(echo("again"));
    replies.push(Reply::text("done again"));
    replies.push(nothing_to_extract());
    let (mut agent, model) = new_agent(dir.path(), replies);
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "first turn").await;
    turn(&mut agent, &mut history, "second turn").await;

    assert_eq!(model.remaining(), 0);
    let requests = agent_requests(&model);
    assert_eq!(requests.len(), 11);
    let first = system_bytes(&requests[0]);
    assert!(first.contains("deploy-target"), "{first}");
    let first_tools = serde_json::to_string(&requests[0]["tools"]).unwrap();
    for request in &requests {
        assert_eq!(system_bytes(request), first);
        assert_eq!(
            serde_json::to_string(&request["tools"]).unwrap(),
            first_tools
        );
    }
    assert!(
        requests[9].to_string().contains("<memories>"),
        "the recalled memory went into the messages"
    );
    assert_eq!(
        agent.hooks.prompt().stats(),
        Stats {
            assembled: 1,
            hits: 10
        }
    );
    // The key is a pure function of the sections: computing it again from
    // the same state gives the one the assembler stored.
    let key = PromptKey::of(&agent.hooks.prompt_sections());
    assert_eq!(agent.hooks.prompt().key(), Some(key));
}

fn base_sections() -> Vec<Section> {
    vec![
        Section::new("identity", "You are a coding agent."),
        Section::new("workspace", "Working directory: /w."),
        Section::new("tools", "Available tools: bash, read_file."),
    ]
}

/// One edit to a list of sections.
type Change = Box<dyn Fn(&mut Vec<Section>)>;

#[test]
fn the_cache_key_changes_when_and_only_when_an_input_changes() {
    let base = PromptKey::of(&base_sections());
    assert_eq!(PromptKey::of(&base_sections()), base);
    // Adding an absent section, or blank text, is no change at all.
    let mut with_blank = base_sections();
    with_blank.push(Section::new("memory", " \n "));
    assert_eq!(PromptKey::of(&with_blank), base);

    let changes: Vec<(&str, Change)> = vec![
        ("a text", Box::new(|s| s[2].text.push_str(" glob"))),
        ("a topic", Box::new(|s| s[1].topic = "environment".into())),
        (
            "a placement",
            Box::new(|s| s[1] = Section::volatile("workspace", "Working directory: /w.")),
        ),
        ("the order", Box::new(|s| s.swap(0, 1))),
        (
            "a new section",
            Box::new(|s| s.push(Section::new("memory", "- note"))),
        ),
        ("a removed section", Box::new(|s| drop(s.remove(1)))),
        (
            "text moved between fields",
            Box::new(|s| {
                s[0].topic = "identityY".into();
                s[0].text = "ou are a coding agent.".into();
            }),
        ),
        (
            "text moved between sections",
            Box::new(|s| {
                s[0].text = "You are a coding agent.Working".into();
                s[1].text = " directory: /w.".into();
            }),
        ),
    ];
    for (what, change) in changes {
        let mut sections = base_sections();
        change(&mut sections);
        assert_ne!(PromptKey::of(&sections), base, "changing {what}");
    }
}

#[test]
fn the_assembler_reuses_its_prompt_until_the_key_changes() {
    let mut assembler = PromptAssembler::new();
    let (first, outcome) = assembler.get(&base_sections());
    assert_eq!(
        outcome.line(),
        "[assembled] sections: identity, workspace, tools"
    );
    let (again, outcome) = assembler.get(&base_sections());
    assert_eq!(again, first);
    assert_eq!(outcome.line(), "[cache hit] system prompt unchanged");
    assert!(matches!(outcome, Outcome::CacheHit { key } if Some(key) == assembler.key()));

    let mut sections = base_sections();
    sections.push(Section::new("memory", "- note"));
    let (_, outcome) = assembler.get(&sections);
    assert_eq!(
        outcome.line(),
        "[assembled] sections: identity, workspace, tools, memory"
    );
    // Back to the old inputs: a one-entry cache assembles again, and the
    // result is the same bytes as the first time.
    let (back, outcome) = assembler.get(&base_sections());
    assert!(matches!(outcome, Outcome::Assembled { .. }));
    assert_eq!(back, first);
    assert_eq!(
        assembler.stats(),
        Stats {
            assembled: 3,
            hits: 1
        }
    );
}

// --- Cache breakpoints --------------------------------------------------

#[tokio::test]
async fn the_breakpoints_sit_on_the_last_system_block_and_the_last_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = new_agent(
        dir.path(),
        vec![echo("1"), Reply::text("ok"), nothing_to_extract()],
    );
    turn(&mut agent, &mut Vec::new(), "go").await;

    let requests = agent_requests(&model);
    assert_eq!(requests.len(), 2);
    for request in requests {
        let ephemeral = json!({"type": "ephemeral"});
        let system = request["system"].as_array().unwrap();
        assert_eq!(system.len(), 1);
        assert_eq!(system[0]["cache_control"], ephemeral);
        let tools = request["tools"].as_array().unwrap();
        let (last, others) = tools.split_last().unwrap();
        assert_eq!(last["name"], "task");
        assert_eq!(last["cache_control"], ephemeral);
        assert!(
            others
                .iter()
                .all(|tool| tool.get("cache_control").is_none())
        );
        // The API allows four breakpoints per request.
        let count = request.to_string().matches("\"cache_control\"").count();
        assert_eq!(count, 2, "{request}");
    }
}

#[test]
fn volatile_sections_go_after_the_breakpoint_and_leave_the_prefix_alone() {
    let mut sections = base_sections();
    sections.insert(1, Section::volatile("clock", "It is 09:00."));
    let blocks = assemble(&sections);
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        blocks[0].text,
        "You are a coding agent.\n\nWorking directory: /w.\n\nAvailable tools: bash, read_file."
    );
    assert!(blocks[0].cache_control.is_some());
    assert_eq!(blocks[1].text, "It is 09:00.");
    assert!(blocks[1].cache_control.is_none());

    // A new time is a new prompt, but the cached prefix is the same bytes.
    let before = PromptKey::of(&sections);
    sections[1].text = "It is 09:05.".into();
    assert_ne!(PromptKey::of(&sections), before);
    let after = assemble(&sections);
    assert_eq!(after[0], blocks[0]);
    assert_eq!(after[1].text, "It is 09:05.");

    // Only volatile sections: no stable prefix, so no breakpoint.
    let only = assemble(&[Section::volatile("clock", "It is 09:00.")]);
    assert_eq!(only.len(), 1);
    assert!(only[0].cache_control.is_none());
    assert!(assemble(&[Section::new("memory", "")]).is_empty());
}

// --- The demo -----------------------------------------------------------

// Lesson 11's script stages failures. The loop asks for the system prompt
// once per round, and recovery sends every attempt of the round with it, so
// retries reuse the same cached prefix (paused time: the waits are free).
#[tokio::test(start_paused = true)]
async fn the_demo_script_sends_every_retry_with_the_prompt_assembled_for_its_round() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::from_json(include_str!("../demo.json")).unwrap();
    let (mut agent, model) = new_agent(dir.path(), script.replies);
    let mut history = Vec::new();

    turn(
        &mut agent,
        &mut history,
        "write a guide to error recovery into GUIDE.md",
    )
    .await;

    assert_eq!(model.remaining(), 0);
    assert!(errors(&history).is_empty(), "{:?}", errors(&history));
    // Three rounds: five attempts for the outline, four for the guide (a
    // cut stream, an escalation, a continuation), two around a compaction.
    // The summary and the extraction are side queries, without tools.
    let requests = agent_requests(&model);
    assert_eq!(requests.len(), 11);
    assert_eq!(model.requests().len(), 13);
    for request in &requests[1..] {
        assert_eq!(system_bytes(request), system_bytes(&requests[0]));
    }
    assert_eq!(
        agent.hooks.prompt().stats(),
        Stats {
            assembled: 1,
            hits: 2
        }
    );
    let guide = std::fs::read_to_string(dir.path().join("GUIDE.md")).unwrap();
    assert!(
        guide.contains("## 3. Conversations that no longer fit"),
        "{guide}"
    );
    assert!(store(dir.path()).list().is_empty());
}
