//! The assembled system prompt: which sections it holds, when it is built
//! again and when reused (the `prompt` notices say which), that it stays
//! the same bytes while its inputs do, and where its cache breakpoints
//! are. Driven through the real loop by a scripted model, through the
//! assembler directly, and over the wire through the lesson binary.
//!
//! Memory's side queries (recall, extraction) carry a system prompt of
//! their own and offer no tools, so the scripted model keeps them apart:
//! `model.requests()` below holds only the agent's own requests.

use std::path::Path;
use std::sync::Arc;

use lesson::LessonHooks;
use lesson::memory::{Memory, MemoryStore, MemoryType};
use lesson::prompt::{Outcome, PromptAssembler, PromptKey, Section, Stats, assemble};
use serde_json::{Value, json};
use shared::agent::Agent;
use shared::history::validate;
use shared::hooks::ToolOutput;
use shared::model::scripted::{Reply, ScriptedModel, SideRule};
use shared::notice::Notices;
use shared::protocol::{Message, ToolSpec};
use shared::testing::{FakeResponse, FakeServer, Recorder, anthropic_stream};

use crate::support;

const PLANNING: &str = "plan it with todo_write";
const MEMORY: &str = "# Memory\n";
const TABS_LINE: &str =
    "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md";
/// The `prompt` notices, as the assembler words them.
const ASSEMBLED: &str = "assembled from sections: identity, workspace, tools, planning, skills";
const ASSEMBLED_WITH_MEMORY: &str =
    "assembled from sections: identity, workspace, tools, planning, skills, memory";
const CACHE_HIT: &str = "cache hit: system prompt unchanged";

/// An agent in `dir` that approves every question (these tests are about
/// the prompt, not the permission gate), playing `replies`.
fn new_agent(dir: &Path, replies: Vec<Reply>) -> (Agent<LessonHooks>, Arc<ScriptedModel>) {
    new_agent_with(dir, ScriptedModel::new(replies), support::options())
}

fn new_agent_with(
    dir: &Path,
    model: ScriptedModel,
    options: lesson::Options,
) -> (Agent<LessonHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(model);
    (support::agent_with(dir, model.clone(), options), model)
}

/// Runs one turn that must complete, checks the history, and returns what
/// the turn showed.
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

/// The lesson's tools, sorted by name, as the tools section lists them.
fn sorted_tools(leave_out: &[&str], add: &[&str]) -> String {
    let mut names: Vec<&str> = support::TOOLS
        .iter()
        .chain(add)
        .copied()
        .filter(|name| !leave_out.contains(name))
        .collect();
    names.sort_unstable();
    names.join(", ")
}

fn echo(word: &str) -> Reply {
    Reply::tool("bash", json!({"command": format!("echo {word}")}))
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
    let options = lesson::Options {
        skills: lesson::SkillsArgs {
            skills_dir: Some(dir.path().join("skills")),
        },
        ..support::options()
    };
    let (mut agent, model) = new_agent_with(
        dir.path(),
        ScriptedModel::new(vec![Reply::text("hi")]),
        options,
    );
    let shown = turn(&mut agent, &mut Vec::new(), "hello").await;

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let root = dir.path().canonicalize().unwrap();
    let system = serde_json::to_string_pretty(&requests[0]["system"])
        .unwrap()
        .replace(&root.display().to_string(), "[WORKSPACE]");
    insta::assert_snapshot!("first_request_system", system);
    assert_eq!(shown.notices_tagged("prompt"), [ASSEMBLED]);
    assert_eq!(
        agent.hooks().prompt().stats(),
        Stats {
            assembled: 1,
            hits: 0
        }
    );
}

#[tokio::test]
async fn the_tools_section_names_the_tools_the_model_is_offered_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let replies = (0..4).map(|_| Reply::text("ok")).collect();
    let (mut agent, model) = new_agent(dir.path(), replies);
    let mut history = Vec::new();

    let one = turn(&mut agent, &mut history, "one").await;
    // Take todo_write away: the tools section loses it, and the planning
    // section, which would tell the model to call it, is left out.
    assert!(agent.hooks_mut().tool_registry().unregister("todo_write"));
    let two = turn(&mut agent, &mut history, "two").await;
    // A new tool appears in the list in its sorted place.
    agent.hooks_mut().tool_registry().register(
        ToolSpec::new("echo_back", "Echoes its input.", json!({"type": "object"})),
        |input, _| async move { ToolOutput::ok(input.to_string()) },
    );
    let three = turn(&mut agent, &mut history, "three").await;
    // Registering bash again moves it to the end of the tool specs, but the
    // set of tools is the same, so the prompt is too.
    let bash = agent.hooks_mut().tool_registry().specs()[0].clone();
    assert_eq!(bash.name, "bash");
    agent
        .hooks_mut()
        .tool_registry()
        .register(bash, |_, _| async { ToolOutput::ok("") });
    let four = turn(&mut agent, &mut history, "four").await;

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let texts: Vec<String> = requests.iter().map(system_text).collect();
    let all = sorted_tools(&[], &[]);
    assert!(
        texts[0].contains(&format!("Available tools: {all}.")),
        "{}",
        texts[0]
    );
    // The section names exactly what the request offers.
    let mut offered = tool_names(&requests[0]);
    offered.sort();
    assert_eq!(offered.join(", "), all);
    assert!(texts[0].contains(PLANNING));
    let without = sorted_tools(&["todo_write"], &[]);
    assert!(
        texts[1].contains(&format!("Available tools: {without}.")),
        "{}",
        texts[1]
    );
    assert!(!texts[1].contains("todo_write"), "{}", texts[1]);
    let with_echo = sorted_tools(&["todo_write"], &["echo_back"]);
    assert!(
        texts[2].contains(&format!("Available tools: {with_echo}.")),
        "{}",
        texts[2]
    );
    assert_eq!(system_bytes(&requests[3]), system_bytes(&requests[2]));
    // The request's tool list did change order: bash now comes last.
    let names = tool_names(&requests[3]);
    assert_eq!(names.last().map(String::as_str), Some("bash"), "{names:?}");
    assert_ne!(tool_names(&requests[2]), names);
    // What the terminal was told, turn by turn.
    assert_eq!(one.notices_tagged("prompt"), [ASSEMBLED]);
    assert_eq!(
        two.notices_tagged("prompt"),
        ["assembled from sections: identity, workspace, tools, skills"]
    );
    assert_eq!(
        three.notices_tagged("prompt"),
        ["assembled from sections: identity, workspace, tools, skills"]
    );
    assert_eq!(four.notices_tagged("prompt"), [CACHE_HIT]);
    assert_eq!(
        agent.hooks().prompt().stats(),
        Stats {
            assembled: 3,
            hits: 1
        }
    );
    assert!(!agent.hooks_mut().tool_registry().unregister("todo_write"));
}

#[tokio::test]
async fn the_memory_section_is_there_only_while_the_store_lists_a_memory() {
    let dir = tempfile::tempdir().unwrap();
    // Memory's side queries are answered `[]` (nothing to recall, nothing
    // to extract), so only the test changes the store.
    let replies = (0..5).map(|_| Reply::text("ok")).collect();
    let (mut agent, model) = new_agent(dir.path(), replies);
    let mut history = Vec::new();

    let mut shown = Vec::new();
    shown.push(turn(&mut agent, &mut history, "no memory").await);
    std::fs::create_dir_all(dir.path().join(".memory")).unwrap();
    std::fs::write(dir.path().join(".memory/MEMORY.md"), "  \n\n").unwrap();
    shown.push(turn(&mut agent, &mut history, "blank index").await);
    store(dir.path()).write(&tabs()).unwrap();
    shown.push(turn(&mut agent, &mut history, "a memory").await);
    shown.push(turn(&mut agent, &mut history, "the same memory").await);
    store(dir.path()).remove("user-prefers-tabs.md").unwrap();
    shown.push(turn(&mut agent, &mut history, "memory gone").await);

    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
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
    let notices: Vec<Vec<String>> = shown
        .iter()
        .map(|recorder| recorder.notices_tagged("prompt"))
        .collect();
    assert_eq!(
        notices,
        [
            [ASSEMBLED],
            [CACHE_HIT],
            [ASSEMBLED_WITH_MEMORY],
            [CACHE_HIT],
            [ASSEMBLED]
        ]
    );
    assert_eq!(
        agent.hooks().prompt().stats(),
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
    // Turn 1: eight rounds of tools, then the answer. Turn 2: one round,
    // then the answer. Each turn's recall loads a memory into the
    // messages, which must leave the system prompt alone.
    let mut replies: Vec<Reply> = (0..8).map(|i| echo(&i.to_string())).collect();
    replies.push(Reply::text("done"));
    replies.push(echo("again"));
    replies.push(Reply::text("done again"));
    let model = ScriptedModel::new(replies).with_side_rule(SideRule::new(
        "Which of these saved memories are relevant",
        Reply::text("[\"user-prefers-tabs\"]"),
    ));
    let (mut agent, model) = new_agent_with(dir.path(), model, support::options());
    let mut history = Vec::new();
    let first_turn = turn(&mut agent, &mut history, "first turn").await;
    let second_turn = turn(&mut agent, &mut history, "second turn").await;

    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
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
    for request in [&requests[0], &requests[9]] {
        let messages = request["messages"].to_string();
        assert!(messages.contains("<memories>"), "{messages}");
    }
    assert_eq!(
        first_turn.notices_tagged("prompt"),
        [vec![ASSEMBLED_WITH_MEMORY], vec![CACHE_HIT; 8]].concat()
    );
    assert_eq!(second_turn.notices_tagged("prompt"), [CACHE_HIT; 2]);
    assert_eq!(
        agent.hooks().prompt().stats(),
        Stats {
            assembled: 1,
            hits: 10
        }
    );
    // The key is a pure function of the sections: computing it again from
    // the same state gives the one the assembler stored.
    let key = PromptKey::of(&agent.hooks().prompt_sections());
    assert_eq!(agent.hooks().prompt().key(), Some(key));
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
fn the_assembler_reuses_its_prompt_until_the_key_changes_and_says_which() {
    let notices = Notices::new();
    let mut assembler = PromptAssembler::new(notices.clone());
    let (first, outcome) = assembler.get(&base_sections());
    assert_eq!(
        outcome.line(),
        "assembled from sections: identity, workspace, tools"
    );
    let (again, outcome) = assembler.get(&base_sections());
    assert_eq!(again, first);
    assert_eq!(outcome.line(), CACHE_HIT);
    assert!(matches!(outcome, Outcome::CacheHit { key } if Some(key) == assembler.key()));
    // `get` only reports to its caller.
    assert!(notices.take().is_empty());

    let mut sections = base_sections();
    sections.push(Section::new("memory", "- note"));
    // `build`, which the hooks call, reports as a notice too.
    let built = assembler.build(&sections);
    assert_eq!(built, assemble(&sections));
    // Back to the old inputs: a one-entry cache assembles again, and the
    // result is the same bytes as the first time.
    assert_eq!(assembler.build(&base_sections()), first);
    assert_eq!(assembler.build(&base_sections()), first);
    let reported: Vec<String> = notices
        .take()
        .into_iter()
        .map(|notice| notice.to_string())
        .collect();
    assert_eq!(
        reported,
        [
            "[prompt] assembled from sections: identity, workspace, tools, memory",
            "[prompt] assembled from sections: identity, workspace, tools",
            "[prompt] cache hit: system prompt unchanged",
        ]
    );
    assert_eq!(
        assembler.stats(),
        Stats {
            assembled: 3,
            hits: 2
        }
    );
}

// --- Cache breakpoints --------------------------------------------------

#[tokio::test]
async fn the_breakpoints_sit_on_the_last_system_block_the_last_tool_and_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = new_agent(dir.path(), vec![echo("1"), Reply::text("ok")]);
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await;

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // The end of the conversation, and the end of the previous request's.
    let ephemeral = json!({"type": "ephemeral"});
    let first = &requests[0]["messages"];
    assert_eq!(first[0]["content"][0]["cache_control"], ephemeral);
    let second = &requests[1]["messages"];
    assert_eq!(second.as_array().unwrap().len(), 3);
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(second[2]["content"][0]["cache_control"], ephemeral);
    assert_eq!(second[0]["content"][0]["cache_control"], ephemeral);
    assert!(!second[1].to_string().contains("cache_control"));
    // Set on the request only: the history never holds a marker.
    let stored = serde_json::to_string(&history).unwrap();
    assert!(!stored.contains("cache_control"), "{stored}");
    for (request, in_messages) in requests.iter().zip([1, 2]) {
        let system = request["system"].as_array().unwrap();
        assert_eq!(system.len(), 1);
        assert_eq!(system[0]["cache_control"], ephemeral);
        let tools = request["tools"].as_array().unwrap();
        let (last, others) = tools.split_last().unwrap();
        assert_eq!(last["name"], *support::TOOLS.last().unwrap());
        assert_eq!(last["cache_control"], ephemeral);
        assert!(
            others
                .iter()
                .all(|tool| tool.get("cache_control").is_none())
        );
        // The API allows four breakpoints per request.
        let count = request.to_string().matches("\"cache_control\"").count();
        assert_eq!(count, 2 + in_messages, "{request}");
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

// --- Over the wire, through the lesson binary ---------------------------

/// A streamed reply of plain text (a final answer, or a side query's).
fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

fn bash_call(id: &str, command: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": command}})
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Runs `-p "do it"` (plus `extra`) against `server`.
async fn run_against(dir: &Path, server: &FakeServer, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["-p", "do it"];
    args.extend_from_slice(extra);
    let vars = [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "sk-test-key"),
    ];
    support::run_binary(dir, &args, &vars, "").await
}

/// The `[prompt]` lines of the binary's standard error.
fn prompt_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("[prompt] "))
        .collect()
}

/// The bytes of the `system` field in a request body, as sent.
fn raw_system(body: &str) -> &str {
    let start = body.find("\"system\":").unwrap();
    let end = body.find("\"messages\":").unwrap();
    &body[start..end]
}

#[tokio::test]
async fn over_the_wire_the_prefix_is_marked_for_caching_and_sent_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    // The call, the answer, then memory's extraction side query.
    let server = FakeServer::start(vec![
        FakeResponse::sse_body(anthropic_stream(
            &[bash_call("toolu_1", "echo hi")],
            "tool_use",
        )),
        text_reply("finished"),
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = run_against(dir.path(), &server, &[]).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(prompt_lines(&stderr), [ASSEMBLED, CACHE_HIT], "{stderr}");
    let received = server.received();
    assert_eq!(received.len(), 3);
    assert!(received[2].json().get("tools").is_none());
    assert_eq!(raw_system(&received[0].body), raw_system(&received[1].body));
    // The messages grow at the end only: the second request starts with the
    // first one's, then sends the call back with its real result.
    let messages = |index: usize| received[index].json()["messages"].clone();
    let (before, after) = (messages(0), messages(1));
    let after = after.as_array().unwrap();
    assert_eq!(after.len(), 3);
    assert_eq!(after[0], before[0]);
    assert_eq!(after[1]["content"][0], bash_call("toolu_1", "echo hi"));
    let result = &after[2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(result["content"].as_str().unwrap().trim_end(), "hi");
    let first = received[0].json();
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(first["system"][0]["cache_control"], ephemeral);
    assert_eq!(first["system"].as_array().unwrap().len(), 1);
    let tools = first["tools"].as_array().unwrap();
    let (last, others) = tools.split_last().unwrap();
    assert_eq!(last["cache_control"], ephemeral);
    assert!(
        others
            .iter()
            .all(|tool| tool.get("cache_control").is_none())
    );
    // And the end of the conversation, the prompt so far.
    assert_eq!(
        first["messages"][0]["content"][0]["cache_control"],
        ephemeral
    );
    assert_eq!(received[0].body.matches("\"cache_control\"").count(), 3);
    // The tools section names exactly the tools the request offers.
    let mut names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    let system = first["system"][0]["text"].as_str().unwrap();
    assert!(
        system.contains(&format!("Available tools: {}.", names.join(", "))),
        "{system}"
    );
    assert_eq!(names.join(", "), sorted_tools(&[], &[]));
}

#[tokio::test]
async fn with_v_the_cache_figures_the_api_reports_are_logged_and_p_sums_them_up() {
    let dir = tempfile::tempdir().unwrap();
    // A reply whose usage says most of the prompt came from the cache.
    let body = anthropic_stream(&[json!({"type": "text", "text": "hi"})], "end_turn").replace(
        r#""usage":{"input_tokens":10,"output_tokens":1}"#,
        r#""usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":1834,"input_tokens":12,"output_tokens":1}"#,
    );
    assert!(
        body.contains("1834"),
        "the fake stream changed shape: {body}"
    );
    let server = FakeServer::start(vec![FakeResponse::sse_body(body), text_reply("[]")])
        .await
        .unwrap();

    let output = run_against(dir.path(), &server, &["-v"]).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let figures =
        "1,846 input tokens (1,834 read from cache, 0 written to it, 12 uncached), 5 output tokens";
    assert!(
        stderr.contains(&format!("model call usage: {figures}")),
        "{stderr}"
    );
    assert_eq!(server.received().len(), 2);
    // The `-p` run ends with the turn's sum, here one call.
    assert_eq!(
        stderr.lines().last(),
        Some(format!("usage: {figures}").as_str()),
        "{stderr}"
    );

    // Without -v, only the sum at the end.
    let server = FakeServer::start(vec![text_reply("hi"), text_reply("[]")])
        .await
        .unwrap();
    let output = run_against(dir.path(), &server, &[]).await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("model call"), "{stderr}");
    assert_eq!(
        stderr.lines().last(),
        Some("usage: 10 input tokens, 5 output tokens"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_memory_present_at_start_is_in_the_first_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".memory")).unwrap();
    // Written by hand, without an index: the agent indexes it at start-up.
    std::fs::write(
        dir.path().join(".memory/tabs.md"),
        "---\nname: tabs\ndescription: the user prefers tabs\ntype: user\n---\nTabs.\n",
    )
    .unwrap();
    // The store is not empty, so the turn starts with a recall side query.
    let server = FakeServer::start(vec![
        text_reply("[]"),
        FakeResponse::sse_body(anthropic_stream(
            &[bash_call("toolu_1", "echo hi")],
            "tool_use",
        )),
        text_reply("finished"),
        text_reply("[]"),
    ])
    .await
    .unwrap();

    let output = run_against(dir.path(), &server, &[]).await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        prompt_lines(&stderr),
        [ASSEMBLED_WITH_MEMORY, CACHE_HIT],
        "{stderr}"
    );
    let received = server.received();
    assert_eq!(received.len(), 4);
    assert!(received[0].json().get("tools").is_none());
    let first = received[1].json();
    let system = first["system"][0]["text"].as_str().unwrap();
    assert!(
        system.contains("\n\n# Memory\n")
            && system.contains("- tabs — the user prefers tabs — tabs.md"),
        "{system}"
    );
}
