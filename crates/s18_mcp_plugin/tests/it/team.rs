//! Agent teams (lesson 15), through the lead agent: teammates started with
//! the user's confirmation, their results and messages reaching the lead
//! exactly once and in order — by themselves, before its next model call or
//! while it is idle — the shutdown and plan-approval protocols, the plan
//! gate (and a plan asked for later, with `request_plan`), the roster,
//! mailboxes kept apart per team, mail that comes with a shutdown kept,
//! and teammates stopped at exit.
//!
//! Each teammate plays its own script (an `AgentScript` keyed on its name
//! in its system prompt), so what each agent does is deterministic however
//! the tokio tasks interleave.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lesson::dispatch::ToolContext;
use lesson::permission::ScriptedApprover;
use lesson::team::scripts::{AgentScript, AgentScripts};
use lesson::team::{DEFAULT_TEAM, LEAD, Message, MessageBus, MessageKind, Status, mailbox_dir};
use serde_json::json;
use shared::agent::Agent;
use shared::history::validate;
use shared::hooks::{Hooks, ToolOutput};
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{Message as Turn, ToolSpec};
use shared::testing::Recorder;

use crate::support;

/// How long a test waits for the team before it gives up (real time:
/// teammates run real tools on real tasks). Not a speed assertion.
const DEADLINE: Duration = Duration::from_secs(60);

/// How a teammate's system prompt names it, which picks its script.
fn teammate(name: &str) -> String {
    format!("You are teammate `{name}`")
}

fn spawn(name: &str, prompt: &str) -> serde_json::Value {
    json!({"name": name, "role": format!("{name}'s area"), "prompt": prompt})
}

/// The lead agent in `dir`, its replies `lead`, each teammate's script in
/// `agents`, every question answered yes.
fn team_agent(
    dir: &Path,
    lead: Vec<Reply>,
    agents: Vec<(&str, Vec<Reply>)>,
) -> (Agent<lesson::LessonHooks>, Arc<AgentScripts>) {
    let model = Arc::new(AgentScripts::new(
        ScriptedModel::new(lead),
        agents
            .into_iter()
            .map(|(name, replies)| AgentScript::new(teammate(name), replies)),
    ));
    (
        support::agent_with(dir, model.clone(), support::options()),
        model,
    )
}

/// The team events the lead has seen: those put into its history before
/// a model call, and those delivered while it was idle. Which of the two
/// paths carries an event depends on timing; that each arrives once, in
/// order, does not.
#[derive(Default)]
struct Events {
    lines: Vec<String>,
    /// History messages already scanned.
    scanned: usize,
}

impl Events {
    /// Takes the events new in `history`, then waits for more while the
    /// lead is idle until `done` says there are enough. Returns the events
    /// found by this call.
    async fn until(
        &mut self,
        agent: &mut Agent<lesson::LessonHooks>,
        history: &[Turn],
        done: impl Fn(&[String]) -> bool,
    ) -> Vec<String> {
        let start = self.lines.len();
        for message in &history[self.scanned..] {
            for block in &message.content {
                if let shared::protocol::ContentBlock::Text { text, .. } = block
                    && let Some(events) = text.strip_prefix("[Team events]\n")
                {
                    self.lines.extend(events.lines().map(str::to_string));
                }
            }
        }
        self.scanned = history.len();
        let lines = &mut self.lines;
        let collected = tokio::time::timeout(DEADLINE, async {
            while !done(&lines[start..]) {
                let events = agent.hooks_mut().idle_work().await;
                assert!(events.starts_with("[Team events]\n"), "{events}");
                lines.extend(events.lines().skip(1).map(str::to_string));
            }
        })
        .await;
        assert!(
            collected.is_ok(),
            "the team went quiet; events so far: {:#?}",
            &self.lines[start..]
        );
        self.lines[start..].to_vec()
    }
}

/// Adds `wait_for_team` to the lead: waits until the lead has mail, so
/// the next model call finds events by construction.
fn add_wait_tool(agent: &mut Agent<lesson::LessonHooks>, dir: &Path) {
    let bus = MessageBus::new(mailbox_dir(dir, DEFAULT_TEAM).unwrap());
    agent.hooks_mut().tool_registry().register(
        ToolSpec::new(
            "wait_for_team",
            "Test tool: waits for mail to the lead.",
            json!({"type": "object"}),
        ),
        move |_input, _cx: ToolContext| {
            let bus = bus.clone();
            async move {
                bus.wait(LEAD).await.unwrap();
                ToolOutput::ok("mail is waiting")
            }
        },
    );
}

// ANCHOR: acceptance
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_teammates_send_two_hundred_messages_each_and_the_lead_gets_each_once_in_order() {
    const TEAM: [&str; 4] = ["t1", "t2", "t3", "t4"];
    const EACH: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let lead = vec![
        TEAM.iter()
            .fold(Reply::text("Starting the team."), |reply, name| {
                reply.and_tool("spawn_teammate", spawn(name, "Report in."))
            }),
        Reply::text("The team is working."),
    ];
    let agents = TEAM
        .iter()
        .map(|name| {
            let burst = (0..EACH).fold(Reply::text("Reporting."), |reply, n| {
                reply.and_tool(
                    "send_message",
                    json!({"to": "lead", "content": format!("{name} #{n}")}),
                )
            });
            (*name, vec![burst, Reply::text(format!("{name} finished"))])
        })
        .collect();
    let (mut agent, _) = team_agent(dir.path(), lead, agents);
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "split the work")
        .await
        .0
        .unwrap();

    // Everything the four send: 200 messages, a result and an idle report each.
    let expected = TEAM.len() * (EACH + 2);
    let lines = Events::default()
        .until(&mut agent, &history, |lines| lines.len() >= expected)
        .await;
    assert_eq!(lines.len(), expected, "nothing extra, nothing twice");
    let mut numbers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for line in &lines {
        if let Some((sender, rest)) = line.split_once(" → lead (message): ") {
            let (name, n) = rest.split_once(" #").unwrap();
            assert_eq!(name, sender);
            numbers
                .entry(TEAM.iter().find(|t| **t == sender).unwrap())
                .or_default()
                .push(n.parse().unwrap());
        }
    }
    for name in TEAM {
        assert_eq!(
            numbers[name],
            (0..EACH).collect::<Vec<_>>(),
            "{name}'s messages, each once, in the order sent"
        );
        // The result and the idle report are two messages, in that order,
        // after everything the teammate sent during its turn.
        let own: Vec<&String> = lines
            .iter()
            .filter(|line| line.starts_with(&format!("{name} → lead")))
            .collect();
        assert_eq!(
            own[EACH].as_str(),
            format!("{name} → lead (result): {name} finished")
        );
        assert_eq!(
            own[EACH + 1].as_str(),
            format!("{name} → lead (idle_notification): Waiting for more work.")
        );
    }
    // Nothing is left over to deliver again.
    assert!(agent.hooks().team().take_events().is_none());
    let roster = agent.hooks().team().list();
    assert_eq!(roster.len(), 4);
    for member in roster {
        assert_eq!(member.status, Status::Idle, "{member:?}");
    }
}
// ANCHOR_END: acceptance

#[tokio::test]
async fn events_reach_the_lead_before_its_next_model_call_after_the_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = team_agent(
        dir.path(),
        vec![
            Reply::tool("spawn_teammate", spawn("auth", "Check the login code.")),
            Reply::tool("wait_for_team", json!({})),
            Reply::text("auth reported."),
        ],
        vec![("auth", vec![Reply::text("Login code checked: fine.")])],
    );
    add_wait_tool(&mut agent, dir.path());
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    validate(&history).unwrap();

    // The third request ends with the wait's result, then the events.
    let requests = model.requests();
    let last = requests[2]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let content = last["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "tool_result");
    let events = content[1]["text"].as_str().unwrap();
    assert!(events.starts_with("[Team events]"), "{events}");
    assert!(
        events.contains("auth → lead (result): Login code checked: fine."),
        "{events}"
    );
    // The user saw who said what.
    assert!(
        recorder
            .notices_tagged("team")
            .contains(&"auth spawned (auth's area)".to_string())
    );
    assert!(
        recorder
            .notices_tagged("bus")
            .iter()
            .any(|n| n.starts_with("auth → lead (result)")),
        "{:?}",
        recorder.notices
    );
}

#[tokio::test]
async fn a_teammate_starts_only_when_the_user_confirms() {
    let dir = tempfile::tempdir().unwrap();
    let approver = ScriptedApprover::new([false]);
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("spawn_teammate", spawn("auth", "x")).and_tool("list_teammates", json!({})),
        Reply::text("The user said no."),
    ]));
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model, options);
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    let results: Vec<(String, bool)> = history
        .iter()
        .flat_map(Turn::tool_results)
        .map(|result| (result.text(), result.is_error))
        .collect();
    assert!(
        results[0].1 && results[0].0.contains("Permission denied"),
        "{results:?}"
    );
    assert_eq!(results[1], ("No teammates yet.".to_string(), false));
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].reason.contains("teammate"), "{:?}", asked[0]);
    assert!(agent.hooks().team().list().is_empty());
}

#[tokio::test]
async fn shutdown_is_settled_by_request_id_and_stray_replies_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = team_agent(
        dir.path(),
        vec![
            Reply::tool("spawn_teammate", spawn("docs", "Write the README.")),
            Reply::text("docs is working."),
            Reply::tool("request_shutdown", json!({"name": "docs"})),
            Reply::text("Asked docs to stop."),
        ],
        vec![("docs", vec![Reply::text("README written.")])],
    );
    let mut history = Vec::new();
    let mut events = Events::default();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    events
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("idle_notification"))
        })
        .await;

    let (outcome, _) = support::turn(&mut agent, &mut history, "stop docs").await;
    outcome.unwrap();
    let lines = events
        .until(&mut agent, &history, |lines| !lines.is_empty())
        .await;
    assert_eq!(
        lines,
        ["docs → lead (shutdown_response): docs accepted shutdown req_0001"]
    );
    let docs = agent.hooks().team().list().pop().unwrap();
    assert_eq!(docs.status, Status::ShutDown);

    // A second reply to the same request, one to a request nobody made,
    // and one from an agent the request was not sent to: each is shown as
    // ignored, and the request stays approved.
    let bus = MessageBus::new(mailbox_dir(dir.path(), DEFAULT_TEAM).unwrap());
    let stray = |from: &str, request_id: &str| {
        Message::new(from, LEAD, MessageKind::ShutdownResponse, "again")
            .unwrap()
            .with_request_id(request_id)
            .with_approve(false)
    };
    bus.send_message(stray("docs", "req_0001")).unwrap();
    bus.send_message(stray("docs", "req_9999")).unwrap();
    bus.send_message(stray("intruder", "req_0001")).unwrap();
    let lines = events
        .until(&mut agent, &history, |lines| lines.len() >= 3)
        .await;
    assert!(
        lines[0].ends_with("ignored, `req_0001` is already approved; a request is answered once"),
        "{lines:?}"
    );
    assert!(
        lines[1].ends_with("ignored, no request has id `req_9999`"),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("ignored, `intruder` cannot answer `req_0001`"),
        "{lines:?}"
    );
    let request = agent
        .hooks()
        .team()
        .shared()
        .protocols
        .get("req_0001")
        .unwrap();
    assert_eq!(request.status, lesson::team::RequestStatus::Approved);
    assert_eq!(request.feedback.as_deref(), Some("Shutting down."));
}

#[tokio::test]
async fn a_teammate_under_plan_approval_cannot_change_files_until_the_lead_approves() {
    let dir = tempfile::tempdir().unwrap();
    let write = |text: &str| json!({"path": "notes.txt", "content": text});
    let (mut agent, model) = team_agent(
        dir.path(),
        vec![
            Reply::tool(
                "spawn_teammate",
                json!({"name": "cfg", "role": "config", "prompt": "Tidy the config.", "require_plan": true}),
            ),
            Reply::text("cfg must plan first."),
            Reply::tool(
                "review_plan",
                json!({"request_id": "req_0001", "approve": true, "feedback": "Go."}),
            )
            .and_tool(
                "review_plan",
                json!({"request_id": "req_0001", "approve": false}),
            )
            .and_tool(
                "review_plan",
                json!({"request_id": "req_0042", "approve": true}),
            ),
            Reply::text("Approved."),
        ],
        vec![(
            "cfg",
            vec![
                Reply::tool("write_file", write("too early"))
                    .and_tool("bash", json!({"command": "touch too-early"}))
                    .and_tool("read_file", json!({"path": "."}))
                    .and_tool("submit_plan", json!({"plan": "Write notes.txt."})),
                Reply::text("Plan submitted; waiting."),
                Reply::tool("write_file", write("approved")),
                Reply::text("Done."),
            ],
        )],
    );
    let mut history = Vec::new();
    let mut events = Events::default();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    let lines = events
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("idle_notification"))
        })
        .await;
    assert!(
        lines[0].starts_with("cfg → lead (plan_approval_request) req_0001: Write notes.txt."),
        "{lines:?}"
    );
    assert_eq!(
        agent.hooks().team().list()[0].status,
        Status::AwaitingApproval
    );
    // The gate held: neither the write nor the command ran.
    assert!(!dir.path().join("notes.txt").exists());
    assert!(!dir.path().join("too-early").exists());
    let first = &model.agent_requests(&teammate("cfg"))[1];
    let blocked = first.to_string();
    assert!(
        blocked.contains("Blocked: plan status is required"),
        "{blocked}"
    );

    // The lead approves once; the duplicate and the unknown id are refused.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "review it").await;
    outcome.unwrap();
    let results = &recorder.results;
    assert!(!results[0].is_error, "{}", results[0].text());
    assert!(results[1].is_error && results[1].text().contains("already approved"));
    assert!(results[2].is_error && results[2].text().contains("no request has id `req_0042`"));

    let lines = events
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("(result): Done."))
        })
        .await;
    assert!(!lines.is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "approved"
    );
    let approved = model.agent_requests(&teammate("cfg"))[2].to_string();
    assert!(
        approved.contains("[Plan req_0001 approved by lead] Go."),
        "{approved}"
    );
}

#[tokio::test]
async fn the_roster_lists_each_teammate_and_names_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = team_agent(
        dir.path(),
        vec![
            Reply::tool("spawn_teammate", spawn("ui", "Look at the login page."))
                .and_tool("spawn_teammate", spawn("ui", "A second ui."))
                .and_tool("spawn_teammate", spawn("../evil", "x"))
                .and_tool("spawn_teammate", spawn("lead", "x"))
                .and_tool("send_message", json!({"to": "nobody", "content": "hi"})),
            Reply::text("ok"),
            Reply::tool("list_teammates", json!({})),
            Reply::text("listed"),
        ],
        vec![("ui", vec![Reply::text("Login page looked at.")])],
    );
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let results = &recorder.results;
    assert!(!results[0].is_error);
    assert!(results[1].is_error && results[1].text().contains("already on the team"));
    assert!(results[2].is_error && results[2].text().contains("agent name `../evil`"));
    assert!(results[3].is_error && results[3].text().contains("lead's own name"));
    assert!(
        results[4].is_error
            && results[4]
                .text()
                .contains("no teammate named `nobody`; the team is: ui")
    );
    assert!(!dir.path().join("evil.jsonl").exists());

    Events::default()
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("idle_notification"))
        })
        .await;
    let (_, recorder) = support::turn(&mut agent, &mut history, "who is there?").await;
    let listing = recorder.results[0].text();
    assert!(
        listing.starts_with("ui (ui's area): idle — reported its result, "),
        "{listing}"
    );
}

#[tokio::test]
async fn teammates_still_working_at_exit_are_stopped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = team_agent(
        dir.path(),
        vec![
            Reply::tool("spawn_teammate", spawn("slow", "Run the long job.")),
            Reply::text("slow is working."),
        ],
        vec![(
            "slow",
            vec![Reply::tool("bash", json!({"command": "sleep 60"}))],
        )],
    );
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    // Wait until the teammate is inside its command.
    tokio::time::timeout(DEADLINE, async {
        while agent.hooks().team().list()[0].status != Status::Working {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let mut recorder = Recorder::default();
    tokio::time::timeout(DEADLINE, agent.finish(&mut recorder))
        .await
        .expect("exit does not wait for the teammate's command");
    assert!(
        recorder
            .notices_tagged("bus")
            .contains(&"slow was still on the team at exit and was stopped".to_string()),
        "{:?}",
        recorder.notices
    );
    assert!(matches!(
        agent.hooks().team().list()[0].status,
        Status::Stopped(_)
    ));
}

#[tokio::test]
async fn the_lead_asks_a_working_teammate_for_a_plan_and_it_answers_through_the_plan_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let write = |text: &str| json!({"path": "notes.txt", "content": text});
    let (mut agent, model) = team_agent(
        dir.path(),
        vec![
            Reply::tool("spawn_teammate", spawn("cfg", "Look at the config.")),
            Reply::text("cfg is looking."),
            Reply::tool(
                "request_plan",
                json!({"name": "cfg", "about": "How will you change notes.txt?"}),
            )
            .and_tool("request_plan", json!({"name": "nobody"})),
            Reply::text("Asked cfg for a plan."),
            Reply::tool(
                "review_plan",
                json!({"request_id": "req_0001", "approve": true, "feedback": "Go."}),
            ),
            Reply::text("Approved."),
        ],
        vec![(
            "cfg",
            vec![
                // Spawned without a plan: its first assignment needs none.
                Reply::text("Config looked at."),
                Reply::tool("write_file", write("too early"))
                    .and_tool("submit_plan", json!({"plan": "Write notes.txt."})),
                Reply::text("Plan submitted; waiting."),
                Reply::tool("write_file", write("approved")),
                Reply::text("Done."),
            ],
        )],
    );
    let mut history = Vec::new();
    let mut events = Events::default();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    events
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("idle_notification"))
        })
        .await;

    // Later, the lead asks for a plan; an unknown name is refused.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "ask for a plan").await;
    outcome.unwrap();
    assert!(
        !recorder.results[0].is_error,
        "{}",
        recorder.results[0].text()
    );
    assert!(
        recorder.results[1].is_error
            && recorder.results[1]
                .text()
                .contains("no teammate named `nobody`"),
        "{}",
        recorder.results[1].text()
    );
    let lines = events
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("idle_notification"))
        })
        .await;
    assert!(
        lines.iter().any(|line| line
            .starts_with("cfg → lead (plan_approval_request) req_0001: Write notes.txt.")),
        "{lines:?}"
    );
    assert_eq!(
        agent.hooks().team().list()[0].status,
        Status::AwaitingApproval
    );
    let requests = model.agent_requests(&teammate("cfg"));
    let asked = requests[1].to_string();
    assert!(
        asked.contains("[plan_request from lead] How will you change notes.txt?"),
        "{asked}"
    );
    // The request closed the gate: the write before the plan did not run.
    let blocked = requests[2].to_string();
    assert!(
        blocked.contains("Blocked: plan status is required"),
        "{blocked}"
    );
    assert!(!dir.path().join("notes.txt").exists());

    // Approved through review_plan, as a plan required at spawn would be.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "review it").await;
    outcome.unwrap();
    assert!(
        !recorder.results[0].is_error,
        "{}",
        recorder.results[0].text()
    );
    events
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("(result): Done."))
        })
        .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "approved"
    );
    let request = agent
        .hooks()
        .team()
        .shared()
        .protocols
        .get("req_0001")
        .unwrap();
    assert_eq!(request.status, lesson::team::RequestStatus::Approved);
}

#[tokio::test]
async fn mail_that_comes_with_a_shutdown_request_stays_in_the_inbox() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, _) = team_agent(
        dir.path(),
        vec![
            Reply::tool("spawn_teammate", spawn("docs", "Wait for the go file.")),
            Reply::text("docs is waiting."),
        ],
        vec![(
            "docs",
            vec![
                // Busy until the test says go, so that what the lead sends
                // meanwhile is read in one take.
                Reply::tool(
                    "bash",
                    json!({"command": "while [ ! -e go ]; do sleep 0.01; done"}),
                ),
                Reply::text("Went."),
            ],
        )],
    );
    let mut history = Vec::new();
    let mut events = Events::default();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    let team = agent.hooks().team().clone();
    team.send(LEAD, "docs", "Also update the changelog.")
        .unwrap();
    let request = team.request_shutdown("docs").unwrap();
    std::fs::write(dir.path().join("go"), "").unwrap();

    let lines = events
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("shutdown_response"))
        })
        .await;
    assert!(
        lines
            .iter()
            .any(|line| line.ends_with(&format!("docs accepted shutdown {}", request.request_id))),
        "{lines:?}"
    );
    assert_eq!(agent.hooks().team().list()[0].status, Status::ShutDown);
    // The message was not lost with the teammate: it is still in its inbox,
    // and the lead was told so.
    let left = team.shared().bus.take("docs").unwrap();
    let contents: Vec<&str> = left
        .messages
        .iter()
        .map(|message| message.content.as_str())
        .collect();
    assert_eq!(contents, ["Also update the changelog."]);
    assert_eq!(left.messages[0].from, LEAD);
    let settled = team.shared().protocols.get(&request.request_id).unwrap();
    assert_eq!(
        settled.feedback.as_deref(),
        Some("Shutting down; 1 message left unread in my mailbox.")
    );
}

#[tokio::test]
async fn two_teams_in_one_workspace_keep_their_mail_apart_and_a_restarted_lead_finds_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let lead_of = |team: &str| {
        support::agent_with(
            dir.path(),
            Arc::new(ScriptedModel::new(Vec::new())),
            lesson::Options {
                team: team.to_string(),
                ..support::options()
            },
        )
    };
    // What a teammate of `team` sends its lead.
    let report = |team: &str, text: &str| {
        MessageBus::new(mailbox_dir(dir.path(), team).unwrap())
            .send("worker", LEAD, MessageKind::Result, text)
            .unwrap();
    };
    let red = lead_of("red");
    let blue = lead_of("blue");
    report("red", "red's result");
    report("blue", "blue's result");
    let red_events = red.hooks().team().take_events().unwrap();
    assert!(red_events.contains("red's result"), "{red_events}");
    assert!(!red_events.contains("blue's result"), "{red_events}");
    let blue_events = blue.hooks().team().take_events().unwrap();
    assert!(blue_events.contains("blue's result"), "{blue_events}");
    assert!(!blue_events.contains("red's result"), "{blue_events}");

    // Red's lead restarts; mail sent meanwhile waits for it, not for blue.
    drop(red);
    report("red", "sent while red's lead was away");
    assert_eq!(blue.hooks().team().take_events(), None);
    let red = lead_of("red");
    let events = red.hooks().team().take_events().unwrap();
    assert!(
        events.contains("sent while red's lead was away"),
        "{events}"
    );

    // A team name is one path component, like an agent's name.
    let refused = lesson::build(
        support::setup(dir.path(), Arc::new(ScriptedModel::new(Vec::new()))),
        lesson::Options {
            team: "../elsewhere".to_string(),
            ..support::options()
        },
    );
    let error = refused.err().unwrap().to_string();
    assert!(error.contains("invalid team name"), "{error}");
}

#[tokio::test]
async fn only_a_tasks_owner_completes_it_and_the_lead_needs_force_for_a_teammates() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = team_agent(
        dir.path(),
        vec![
            Reply::tool("create_task", json!({"subject": "schema"}))
                .and_tool("create_task", json!({"subject": "docs"}))
                .and_tool("spawn_teammate", spawn("alice", "Claim task 1.")),
            Reply::text("alice is on it."),
            Reply::tool(
                "spawn_teammate",
                spawn("bob", "Take task 2; finish task 1."),
            )
            .and_tool("complete_task", json!({"task_id": "1"})),
            Reply::text("bob is on it."),
            Reply::tool("complete_task", json!({"task_id": "2", "force": true})).and_tool(
                "send_message",
                json!({"to": "alice", "content": "Finish task 1."}),
            ),
            Reply::text("Sent."),
        ],
        vec![
            (
                "alice",
                vec![
                    Reply::tool("claim_task", json!({"task_id": "1"})),
                    Reply::text("Claimed task 1."),
                    Reply::tool("complete_task", json!({"task_id": "1"})),
                    Reply::text("Done."),
                ],
            ),
            (
                "bob",
                vec![
                    Reply::tool("claim_task", json!({"task_id": "2"}))
                        .and_tool("complete_task", json!({"task_id": "1", "force": true})),
                    Reply::text("Task 1 is alice's."),
                ],
            ),
        ],
    );
    let board = lesson::tasks::TaskBoard::new(
        dir.path().join(lesson::tasks::TASKS_DIR),
        shared::notice::Notices::new(),
    );
    let mut history = Vec::new();
    let mut events = Events::default();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    events
        .until(&mut agent, &history, |lines| {
            lines
                .iter()
                .any(|line| line.starts_with("alice → lead (idle_notification)"))
        })
        .await;
    // A claim without an owner records the teammate that made it.
    let claimed = model.agent_requests(&teammate("alice"))[1].to_string();
    assert!(
        claimed.contains("Claimed task 1: schema (owner: alice)"),
        "{claimed}"
    );

    // Neither another teammate (force or not) nor the lead without force
    // completes alice's task.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "bring bob").await;
    outcome.unwrap();
    assert!(
        !recorder.results[0].is_error,
        "{}",
        recorder.results[0].text()
    );
    assert!(recorder.results[1].is_error);
    assert_eq!(
        recorder.results[1].text(),
        "Task 1 is claimed by alice, not by lead: only alice can complete it. As the lead, \
         you may complete it anyway with force: true."
    );
    events
        .until(&mut agent, &history, |lines| {
            lines
                .iter()
                .any(|line| line.starts_with("bob → lead (idle_notification)"))
        })
        .await;
    let refused = model.agent_requests(&teammate("bob"))[1].to_string();
    assert!(
        refused.contains("Claimed task 2: docs (owner: bob)"),
        "{refused}"
    );
    assert!(
        refused.contains("Task 1 is claimed by alice, not by bob: only alice can complete it.\""),
        "{refused}"
    );
    let task = board.get("1").unwrap();
    assert_eq!(task.status, lesson::tasks::Status::InProgress);
    assert_eq!(task.owner.as_deref(), Some("alice"));

    // The lead completes bob's task with force; alice completes her own.
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "wrap up").await;
    outcome.unwrap();
    assert_eq!(recorder.results[0].text(), "Completed task 2: docs");
    assert!(!recorder.results[0].is_error);
    events
        .until(&mut agent, &history, |lines| {
            lines
                .iter()
                .any(|line| line == "alice → lead (result): Done.")
        })
        .await;
    let done = model.agent_requests(&teammate("alice"))[3].to_string();
    assert!(done.contains("Completed task 1: schema"), "{done}");
    for (id, owner) in [("1", "alice"), ("2", "bob")] {
        let task = board.get(id).unwrap();
        assert_eq!(task.status, lesson::tasks::Status::Completed, "task {id}");
        assert_eq!(task.owner.as_deref(), Some(owner), "task {id}");
    }
}

#[tokio::test]
async fn every_tool_the_plan_gate_allows_is_one_a_teammate_has() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = team_agent(
        dir.path(),
        vec![
            Reply::tool("spawn_teammate", spawn("cfg", "Report in.")),
            Reply::text("cfg is reporting."),
        ],
        vec![("cfg", vec![Reply::text("Here.")])],
    );
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    Events::default()
        .until(&mut agent, &history, |lines| {
            lines.iter().any(|line| line.contains("idle_notification"))
        })
        .await;
    let request = &model.agent_requests(&teammate("cfg"))[0];
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for tool in lesson::team::gate::ALLOWED_BEFORE_APPROVAL {
        assert!(
            offered.contains(&tool),
            "{tool} is not offered: {offered:?}"
        );
    }
}
