//! The compaction pipeline through the real loop: the summary layer, its
//! transcript and circuit breaker, the `compact` tool, and reactive
//! compaction on a prompt-too-long error.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use s11_error_recovery::LessonHooks;
use s11_error_recovery::compact::{CompactConfig, ReactiveOutcome, summary};
use s11_error_recovery::permission::ApproveAll;
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Silent, TurnError};
use shared::cli::Setup;
use shared::error::ApiError;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{ContentBlock, Message, Request, Response, Role};
use shared::tools::Workspace;

/// A scripted model that also lets the test look at the workspace at the
/// moment each request arrives.
struct Probed {
    inner: ScriptedModel,
    probe: Box<dyn Fn(&Request<'_>) + Send + Sync>,
}

impl Model for Probed {
    fn provider(&self) -> &str {
        "probed"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        (self.probe)(request);
        self.inner.send(request, on_delta)
    }
}

fn agent(dir: &Path, model: Arc<dyn Model>, config: CompactConfig) -> Agent<LessonHooks> {
    let mut agent = s11_error_recovery::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model,
            model_id: "test".into(),
        },
        Box::new(ApproveAll),
    )
    .unwrap();
    agent.hooks.compactor().config = config;
    agent
}

async fn turn(
    agent: &mut Agent<LessonHooks>,
    history: &mut Vec<Message>,
    prompt: &str,
) -> Result<String, TurnError> {
    agent
        .run_turn(history, prompt, &mut Silent, &CancellationToken::new())
        .await
        .map(|outcome| outcome.final_text)
}

fn echo(word: &str) -> Reply {
    Reply::tool("bash", json!({"command": format!("echo {word}")}))
}

/// A command whose output is `chars` characters long.
fn long_output(chars: usize) -> Reply {
    Reply::tool(
        "bash",
        json!({"command": format!("head -c {chars} /dev/zero | tr '\\0' x")}),
    )
}

fn is_summary_request(request: &Value) -> bool {
    request["system"][0]["text"] == summary::SYSTEM_PROMPT
}

fn sent_messages(request: &Value) -> Vec<Message> {
    let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
    validate(&messages).unwrap();
    messages
}

fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join(".transcripts")) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    paths
}

/// A small threshold, so a few kilobytes of output cross it.
fn small_threshold(tokens: usize) -> CompactConfig {
    CompactConfig {
        threshold_tokens: tokens,
        ..CompactConfig::default()
    }
}

// ---- layer 4: the summary ---------------------------------------------------

#[tokio::test]
async fn over_the_threshold_the_transcript_is_saved_then_the_history_is_summarised() {
    let dir = tempfile::tempdir().unwrap();
    // When the summary request arrives, the transcript must already be on
    // disk, whole.
    let seen_at_summary: Arc<Mutex<Option<Vec<String>>>> = Arc::default();
    let seen = seen_at_summary.clone();
    let root = dir.path().to_path_buf();
    let model = Arc::new(Probed {
        inner: ScriptedModel::new(vec![
            long_output(20_000),
            Reply::text("SUMMARY: printed 20,000 x characters"),
            Reply::text("done"),
            Reply::text("[]"), // lesson 9's extraction side query
        ]),
        probe: Box::new(move |request| {
            // The summary request, not lesson 9's extraction, which has no
            // tools either.
            if request.system.first().map(|block| block.text.as_str())
                == Some(summary::SYSTEM_PROMPT)
            {
                let lines = transcripts(&root)
                    .iter()
                    .map(|path| std::fs::read_to_string(path).unwrap())
                    .collect();
                *seen.lock().unwrap() = Some(lines);
            }
        }),
    });
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();

    let text = turn(&mut agent, &mut history, "print a lot").await.unwrap();

    assert_eq!(text, "done");
    assert_eq!(model.inner.remaining(), 0);
    let requests = model.inner.requests();
    // The turn's two calls with the summary between them, then extraction.
    assert_eq!(requests.len(), 4);
    assert!(!is_summary_request(&requests[3]));
    assert!(requests[3].get("tools").is_none());
    // The side call: the summariser's prompt, no tools, one user message
    // holding the conversation.
    let side = &requests[1];
    assert!(is_summary_request(side));
    assert!(side.get("tools").is_none());
    assert_eq!(side["max_tokens"], 2_000);
    let input = sent_messages(side);
    assert_eq!(input.len(), 1);
    assert!(input[0].text().contains("print a lot"));
    assert!(input[0].text().contains("xxxxxxxxxx"));
    // The transcript was complete before the side call was made.
    let at_summary = seen_at_summary.lock().unwrap().clone().unwrap();
    assert_eq!(at_summary.len(), 1, "one transcript, written first");
    let lines: Vec<Message> = at_summary[0]
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], Message::user_text("print a lot"));
    assert_eq!(lines[2].role, Role::User);
    let ContentBlock::ToolResult(saved) = &lines[2].content[0] else {
        panic!("the result is in the transcript");
    };
    assert_eq!(saved.text().len(), 20_000);
    // The next request carries one user message: the summary, the current
    // request, and where the transcript is.
    let next = sent_messages(&requests[2]);
    assert_eq!(next.len(), 1);
    let summary = next[0].text();
    assert!(summary.starts_with("[Compacted]"), "{summary}");
    assert!(summary.contains("SUMMARY: printed 20,000 x characters"));
    assert!(summary.contains("The user's current request:\nprint a lot"));
    let transcript = transcripts(dir.path())[0].clone();
    let name = transcript.file_name().unwrap().to_string_lossy();
    assert!(
        summary.contains(&format!(".transcripts/{name}")),
        "{summary}"
    );
    validate(&history).unwrap();
    assert_eq!(history.len(), 2);
}

#[tokio::test]
async fn under_the_threshold_no_summary_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        long_output(1_000),
        echo("two"),
        Reply::text("done"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.unwrap();
    assert!(!model.requests().iter().any(is_summary_request));
    assert!(transcripts(dir.path()).is_empty());
    assert_eq!(history.len(), 6);
}

#[tokio::test]
async fn after_three_failed_summaries_the_breaker_stops_asking() {
    let dir = tempfile::tempdir().unwrap();
    // A threshold of one token: every request is over it.
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::error(ScriptedError::Server),
        echo("one"),
        Reply::error(ScriptedError::Overloaded),
        echo("two"),
        Reply::text(""), // an empty summary is a failure too
        echo("three"),
        // Breaker open: no more side calls, and `compact` says why.
        Reply::tool("compact", json!({})),
        echo("four"),
        Reply::text("done"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), small_threshold(1));
    let mut history = Vec::new();

    let text = turn(&mut agent, &mut history, "go").await.unwrap();

    assert_eq!(text, "done");
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    let side_calls: Vec<usize> = (0..requests.len())
        .filter(|&i| is_summary_request(&requests[i]))
        .collect();
    assert_eq!(side_calls, [0, 2, 4]);
    let compactor = agent.hooks.compactor();
    assert!(compactor.breaker_open());
    assert_eq!(compactor.summary_failures(), 3);
    // The history was left to the cheaper layers: everything is still there.
    validate(&history).unwrap();
    assert_eq!(history.len(), 12);
    let compact_result = history[8].content[0].clone();
    let ContentBlock::ToolResult(compact_result) = compact_result else {
        panic!("the compact call was answered");
    };
    assert!(compact_result.is_error);
    assert!(compact_result.text().contains("unavailable"));
    // Each failed attempt saved its transcript first.
    assert_eq!(transcripts(dir.path()).len(), 3);
}

#[tokio::test]
async fn a_successful_summary_resets_the_failure_count() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        long_output(20_000),
        Reply::error(ScriptedError::Server),
        long_output(20_000),
        Reply::error(ScriptedError::Server),
        long_output(20_000),
        Reply::text("SUMMARY"),
        Reply::text("done"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), small_threshold(2_000));
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.unwrap();
    assert_eq!(model.remaining(), 0);
    let compactor = agent.hooks.compactor();
    assert_eq!(compactor.summary_failures(), 0);
    assert!(!compactor.breaker_open());
    validate(&history).unwrap();
}

// ---- the compact tool -----------------------------------------------------------

#[tokio::test]
async fn compact_is_offered_with_the_course_schema() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::text("hi"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    turn(&mut agent, &mut Vec::new(), "hi").await.unwrap();
    let tools = model.requests()[0]["tools"].as_array().unwrap().clone();
    let compact = tools.iter().find(|tool| tool["name"] == "compact").unwrap();
    assert_eq!(
        compact["input_schema"],
        json!({"type": "object", "properties": {}})
    );
}

#[tokio::test]
async fn compact_summarises_before_the_next_call_and_takes_its_round_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        echo("before"),
        // `compact` is not the last call of its reply: the round's other
        // results must be appended before anything is replaced.
        Reply::tool("compact", json!({})).and_tool("bash", json!({"command": "echo after"})),
        Reply::text("SUMMARY: echoed before and after"),
        Reply::text("done"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    turn(&mut agent, &mut history, "echo twice").await.unwrap();

    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    assert!(is_summary_request(&requests[2]));
    // The summariser saw the whole round: the compact call, its result and
    // the other call's output.
    let input = sent_messages(&requests[2])[0].text();
    assert!(input.contains("\"name\":\"compact\""), "{input}");
    assert!(input.contains("Compaction requested"), "{input}");
    assert!(input.contains("after\\n"), "{input}");
    // Then the history is the summary alone: the compact tool_use and its
    // tool_result left together.
    let next = sent_messages(&requests[3]);
    assert_eq!(next.len(), 1);
    assert!(next[0].text().contains("SUMMARY: echoed before and after"));
    validate(&history).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(transcripts(dir.path()).len(), 1);
}

#[tokio::test]
async fn a_failed_requested_summary_leaves_the_round_intact() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("compact", json!({})),
        Reply::error(ScriptedError::Server),
        Reply::text("done"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();
    turn(&mut agent, &mut history, "go").await.unwrap();
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(agent.hooks.compactor().summary_failures(), 1);
    // The request was used up: the next call does not ask again.
    assert!(
        !model.requests()[2]
            .to_string()
            .contains(summary::SYSTEM_PROMPT)
    );
}

// ---- reactive compaction ----------------------------------------------------------

#[tokio::test]
async fn prompt_too_long_is_compacted_and_retried_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        echo("one"),
        echo("two"),
        echo("three"),
        Reply::error(ScriptedError::PromptTooLong),
        Reply::text("SUMMARY: echoed one"),
        Reply::text("done"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let text = turn(&mut agent, &mut history, "echo three words")
        .await
        .unwrap();

    assert_eq!(text, "done");
    assert_eq!(model.remaining(), 0);
    let requests = model.requests();
    // Four calls, the summary, the retry, then extraction.
    assert_eq!(requests.len(), 7);
    assert!(requests[6].get("tools").is_none() && !is_summary_request(&requests[6]));
    let refused = sent_messages(&requests[3]);
    assert_eq!(refused.len(), 7);
    assert!(is_summary_request(&requests[4]));
    // Only the part before the kept messages was summarised.
    let input = sent_messages(&requests[4])[0].text();
    assert!(
        input.contains("echo one") && !input.contains("echo two"),
        "{input}"
    );
    // The retry: the summary, then the last two rounds verbatim.
    let retried = sent_messages(&requests[5]);
    assert_eq!(retried.len(), 5);
    assert!(retried[0].text().starts_with("[Reactive compact]"));
    assert!(retried[0].text().contains("SUMMARY: echoed one"));
    assert_eq!(retried[1..], refused[3..]);
    assert_eq!(transcripts(dir.path()).len(), 1);
    validate(&history).unwrap();
}

#[tokio::test]
async fn a_second_prompt_too_long_in_a_row_is_returned_as_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::error(ScriptedError::PromptTooLong),
        Reply::text("SUMMARY"),
        Reply::error(ScriptedError::PromptTooLong),
        Reply::text("the next turn works"),
        Reply::text("[]"), // lesson 9's extraction side query
    ]));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let error = turn(&mut agent, &mut history, "go").await.unwrap_err();

    assert!(
        matches!(error, TurnError::Api(ApiError::PromptTooLong { .. })),
        "{error:?}"
    );
    // One compaction, one retry, no third attempt.
    assert_eq!(model.requests().len(), 3);
    validate(&history).unwrap();
    // The session goes on.
    let text = turn(&mut agent, &mut history, "again").await.unwrap();
    assert_eq!(text, "the next turn works");
    validate(&history).unwrap();
}

#[tokio::test]
async fn when_the_summary_fails_reactive_compaction_snips_hard_instead() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies: Vec<Reply> = (0..6).map(|_| long_output(500)).collect();
    replies.push(Reply::error(ScriptedError::PromptTooLong));
    replies.push(Reply::error(ScriptedError::Server)); // the summary fails
    replies.push(Reply::text("done"));
    replies.push(Reply::text("[]")); // lesson 9's extraction side query
    let model = Arc::new(ScriptedModel::new(replies));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();

    let text = turn(&mut agent, &mut history, "the task").await.unwrap();

    assert_eq!(text, "done");
    assert_eq!(model.remaining(), 0);
    assert_eq!(agent.hooks.compactor().summary_failures(), 1);
    let retried = sent_messages(&model.requests()[8]);
    // The task, then the last rounds; every result the model has seen is
    // cleared, and only the newest round's, which it has not, is whole.
    assert!(retried.len() <= 6, "{}", retried.len());
    assert!(retried[0].text().starts_with("the task"));
    assert!(retried[0].text().contains("snipped"));
    let (newest, older) = retried.split_last().unwrap();
    for message in older {
        for block in &message.content {
            if let ContentBlock::ToolResult(result) = block {
                assert!(result.text().starts_with("[Earlier tool result compacted"));
            }
        }
    }
    let ContentBlock::ToolResult(unseen) = &newest.content[0] else {
        panic!("the newest round's result is kept");
    };
    assert_eq!(unseen.text().len(), 500);
    validate(&history).unwrap();
}

#[tokio::test]
async fn with_nothing_left_to_remove_the_error_is_returned_without_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::error(ScriptedError::PromptTooLong),
        Reply::error(ScriptedError::Server),
    ]));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = Vec::new();
    let error = turn(&mut agent, &mut history, "go").await.unwrap_err();
    assert!(matches!(
        error,
        TurnError::Api(ApiError::PromptTooLong { .. })
    ));
    assert_eq!(model.remaining(), 0);
    assert_eq!(history, [Message::user_text("go")]);
}

#[tokio::test]
async fn reactive_compaction_is_usable_on_its_own() {
    // Lesson 11 calls it directly, outside `call_model`.
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(vec![Reply::text("SUMMARY")]));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    let mut history = vec![
        Message::user_text("task"),
        Message::assistant_text("a"),
        Message::user_text("b"),
        Message::assistant_text("c"),
        Message::user_text("d"),
        Message::assistant_text("e"),
        Message::user_text("f"),
    ];
    let outcome = agent.hooks.compactor().reactive_compact(&mut history).await;
    assert!(matches!(outcome, ReactiveOutcome::Summarised { .. }));
    validate(&history).unwrap();
    assert_eq!(history.len(), 5);
    assert_eq!(history[1], Message::assistant_text("c"));
}

// ---- the pipeline -------------------------------------------------------------------

#[tokio::test]
async fn the_pipeline_runs_budget_then_snip_then_micro() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new(Vec::new()));
    let mut agent = agent(dir.path(), model.clone(), CompactConfig::default());
    // 30 rounds of 1,000-character results, then one of 250,000.
    let mut history = vec![Message::user_text("the task")];
    let call = |id: &str| {
        ContentBlock::ToolUse(shared::protocol::ToolUse {
            id: id.into(),
            name: "bash".into(),
            input: json!({}),
        })
    };
    let result = |id: &str, text: String| {
        ContentBlock::ToolResult(shared::protocol::ToolResult::ok(id, text))
    };
    for round in 0..31 {
        let id = format!("toolu_{round:02}");
        let size = if round == 30 { 250_000 } else { 1_000 };
        history.push(Message {
            role: Role::Assistant,
            content: vec![call(&id)],
        });
        history.push(Message {
            role: Role::User,
            content: vec![result(&id, "r".repeat(size))],
        });
    }

    let report = agent
        .hooks
        .compactor()
        .before_model_call(&mut history)
        .await;

    validate(&history).unwrap();
    assert_eq!(
        report.budget.saved,
        [".task_outputs/tool-results/toolu_30.txt"]
    );
    assert_eq!(report.snipped, 14);
    assert_eq!(history.len(), 49);
    // 24 results survive the snip; the newest three keep their content.
    assert_eq!(report.cleared, 21);
    assert_eq!(report.summary, None);
    assert!(report.tokens < 20_000, "{}", report.tokens);
    assert_eq!(model.requests().len(), 0, "no model call was needed");
    // The newest result was saved before anything could clear it.
    let ContentBlock::ToolResult(newest) = &history[48].content[0] else {
        panic!("the newest round is kept");
    };
    assert!(newest.text().starts_with("<persisted-output>"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".task_outputs/tool-results/toolu_30.txt"))
            .unwrap()
            .len(),
        250_000
    );
}
