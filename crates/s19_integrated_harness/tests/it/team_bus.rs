//! The team's message bus (lesson 15): mailboxes hammered by threads and
//! processes, crashes between taking and handling, torn lines, processes
//! killed mid-append, waiting without spinning, and the request/response
//! protocols with the plan gate.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lesson::team::{
    BusError, Message, MessageBus, MessageKind, NameError, PlanGate, PlanStatus, ProtocolError,
    Protocols, RequestKind, RequestStatus, validate_name,
};

/// The mailbox directory inside a test's workspace.
fn mailboxes(workspace: &Path) -> PathBuf {
    workspace.join(".mailboxes")
}

fn ids(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|message| message.id.clone()).collect()
}

/// Drains `name` in a loop until `count` messages have arrived, checking
/// every drain was clean, then checks that nothing more arrives. Waits for
/// the senders, not for a deadline: once `senders_done` says they have all
/// finished, one last drain must bring the rest.
fn drain_until(
    bus: &MessageBus,
    name: &str,
    count: usize,
    mut senders_done: impl FnMut() -> bool,
) -> Vec<Message> {
    let mut received = Vec::new();
    while received.len() < count {
        // Read before draining: a sender that finished before this drain
        // has appended everything it will.
        let finished = senders_done();
        let drained = bus.drain(name).unwrap();
        assert!(drained.skipped.is_empty(), "{:?}", drained.skipped);
        assert!(
            drained.cleanup_error.is_none(),
            "{:?}",
            drained.cleanup_error
        );
        let empty = drained.messages.is_empty();
        received.extend(drained.messages);
        assert!(
            !(finished && received.len() < count),
            "the senders finished, and only {} of {count} messages arrived",
            received.len()
        );
        if empty {
            std::thread::yield_now();
        }
    }
    let extra = bus.drain(name).unwrap().messages;
    assert!(extra.is_empty(), "delivered again: {extra:?}");
    received
}

/// Checks that `received` holds messages `0..per_sender` from each of
/// `senders` (content `<sender>:<n>`), each once, in each sender's order.
fn assert_exactly_once_in_order(received: &[Message], senders: &[String], per_sender: usize) {
    let unique: HashSet<&str> = received.iter().map(|message| message.id.as_str()).collect();
    assert_eq!(unique.len(), received.len(), "an id was delivered twice");
    let mut by_sender: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for message in received {
        let (sender, n) = message.content.split_once(':').unwrap();
        assert_eq!(sender, message.from);
        by_sender
            .entry(sender)
            .or_default()
            .push(n.parse().unwrap());
    }
    let expected: Vec<usize> = (0..per_sender).collect();
    assert_eq!(by_sender.len(), senders.len(), "{:?}", by_sender.keys());
    for sender in senders {
        assert_eq!(by_sender[sender.as_str()], expected, "from {sender}");
    }
}

// ---------------------------------------------------------------- processes

/// The environment that turns the child-process "tests" below on.
const DIR_VAR: &str = "TEAM_BUS_TEST_DIR";
const SENDER_VAR: &str = "TEAM_BUS_TEST_SENDER";
const COUNT_VAR: &str = "TEAM_BUS_TEST_COUNT";

/// What a child prints after each append returned, and after each message
/// it took. A line counts only if it ends with ` ok`, so a line cut short
/// by a kill is not mistaken for a whole id.
const APPENDED: &str = "appended ";
const TAKEN: &str = "taken ";
const HOLDING: &str = "holding the take";

/// Runs this test binary again with only the ignored test `test` selected.
fn spawn_child(test: &str, dir: &Path, vars: &[(&str, String)]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_VAR, dir)
        .envs(vars.iter().map(|(key, value)| (key, value)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The ids a child printed after `marker` on whole lines. The test harness
/// writes on the same lines, so the marker is searched for.
fn marked_id(line: &str, marker: &str) -> Option<String> {
    let (_, rest) = line.split_once(marker)?;
    Some(rest.trim_end().strip_suffix(" ok")?.to_string())
}

fn child_lines(child: &mut Child) -> Lines<BufReader<ChildStdout>> {
    BufReader::new(child.stdout.take().unwrap()).lines()
}

/// Not a test of its own: the body of each appending process below.
#[test]
#[ignore = "run as a child process by the cross-process tests"]
fn appender_process() {
    let (Ok(dir), Ok(sender), Ok(count)) = (
        std::env::var(DIR_VAR),
        std::env::var(SENDER_VAR),
        std::env::var(COUNT_VAR),
    ) else {
        return;
    };
    let bus = MessageBus::new(dir);
    for n in 0..count.parse::<usize>().unwrap() {
        let message = bus
            .send(
                &sender,
                "lead",
                MessageKind::Message,
                format!("{sender}:{n}"),
            )
            .unwrap();
        println!("{APPENDED}{} ok", message.id);
    }
}

/// Not a test of its own: takes `alice`'s mail, then holds it uncommitted
/// until it is killed.
#[test]
#[ignore = "run as a child process by a_killed_taker_leaves_its_messages_to_the_next_take"]
fn taker_process() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return;
    };
    let delivery = MessageBus::new(dir).take("alice").unwrap();
    for message in &delivery.messages {
        println!("{TAKEN}{} ok", message.id);
    }
    println!("{HOLDING}");
    std::thread::sleep(Duration::from_secs(60));
    drop(delivery);
}

// ------------------------------------------------------------------ races

#[test]
fn four_threads_sending_while_a_consumer_drains_deliver_each_message_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let dir = mailboxes(dir.path());
    let senders: Vec<String> = (0..4).map(|n| format!("sender{n}")).collect();
    let threads: Vec<_> = senders
        .iter()
        .map(|sender| {
            // Each sender has its own bus, as separate agents would.
            let bus = MessageBus::new(&dir);
            let sender = sender.clone();
            std::thread::spawn(move || {
                for n in 0..200 {
                    bus.send(
                        &sender,
                        "lead",
                        MessageKind::Message,
                        format!("{sender}:{n}"),
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    let received = drain_until(&MessageBus::new(&dir), "lead", 800, || {
        threads.iter().all(std::thread::JoinHandle::is_finished)
    });
    for thread in threads {
        thread.join().unwrap();
    }
    assert_exactly_once_in_order(&received, &senders, 200);
}

#[test]
fn three_processes_sending_while_a_consumer_drains_deliver_each_message_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let dir = mailboxes(dir.path());
    let senders: Vec<String> = (0..3).map(|n| format!("process{n}")).collect();
    let mut children: Vec<Child> = senders
        .iter()
        .map(|sender| {
            spawn_child(
                "team_bus::appender_process",
                &dir,
                &[(SENDER_VAR, sender.clone()), (COUNT_VAR, "200".to_string())],
            )
        })
        .collect();
    let received = drain_until(&MessageBus::new(&dir), "lead", 600, || {
        children
            .iter_mut()
            .all(|child| matches!(child.try_wait(), Ok(Some(_))))
    });
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "an appender failed");
    }
    assert_exactly_once_in_order(&received, &senders, 200);
}

// ---------------------------------------------------------------- crashes

#[test]
fn an_uncommitted_take_comes_back_and_handled_ids_are_not_delivered_twice() {
    let dir = tempfile::tempdir().unwrap();
    let dir = mailboxes(dir.path());
    let bus = MessageBus::new(&dir);
    let sent: Vec<Message> = (0..5)
        .map(|n| {
            bus.send("bob", "alice", MessageKind::Message, format!("bob:{n}"))
                .unwrap()
        })
        .collect();

    let delivery = bus.take("alice").unwrap();
    assert_eq!(ids(&delivery.messages), ids(&sent));
    // While it is held, no other consumer can take the same messages.
    let error = MessageBus::new(&dir).take("alice").unwrap_err();
    assert!(matches!(error, BusError::Busy { .. }), "{error}");
    assert!(error.to_string().contains("mailbox `alice`"), "{error}");
    // A send meanwhile goes to the new inbox, after the taken ones.
    let late = bus
        .send("bob", "alice", MessageKind::Message, "bob:5")
        .unwrap();
    // The crash: the messages were taken but never committed.
    drop(delivery);

    let mut all = ids(&sent);
    all.push(late.id.clone());
    let again = bus.take("alice").unwrap();
    assert_eq!(ids(&again.messages), all);
    drop(again);

    // A restarted consumer, whose own records say it handled the first two.
    let restarted = MessageBus::new(&dir);
    restarted.mark_seen("alice", sent[..2].iter().map(|message| message.id.as_str()));
    let drained = restarted.drain("alice").unwrap();
    assert_eq!(ids(&drained.messages), all[2..]);
    assert!(restarted.drain("alice").unwrap().messages.is_empty());
    assert!(restarted.is_empty("alice").unwrap());
    assert!(
        MessageBus::new(&dir)
            .drain("alice")
            .unwrap()
            .messages
            .is_empty()
    );
}

#[test]
fn messages_found_on_disk_again_after_a_commit_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let bus = MessageBus::new(mailboxes(dir.path()));
    for n in 0..3 {
        bus.send("bob", "alice", MessageKind::Message, format!("bob:{n}"))
            .unwrap();
    }
    let inbox = bus.mailbox("alice").unwrap().inbox_path();
    let before = std::fs::read(&inbox).unwrap();
    assert_eq!(bus.drain("alice").unwrap().messages.len(), 3);
    // As if the commit's removal had not reached the disk.
    std::fs::write(&inbox, before).unwrap();
    let fresh = bus
        .send("bob", "alice", MessageKind::Message, "bob:3")
        .unwrap();
    let drained = bus.drain("alice").unwrap();
    assert_eq!(ids(&drained.messages), [fresh.id]);
    assert!(bus.is_empty("alice").unwrap());
}

#[test]
fn a_killed_taker_leaves_its_messages_to_the_next_take() {
    let dir = tempfile::tempdir().unwrap();
    let dir = mailboxes(dir.path());
    let bus = MessageBus::new(&dir);
    let sent: Vec<Message> = (0..5)
        .map(|n| {
            bus.send("bob", "alice", MessageKind::Message, format!("bob:{n}"))
                .unwrap()
        })
        .collect();

    let mut child = spawn_child("team_bus::taker_process", &dir, &[]);
    let mut taken = Vec::new();
    for line in child_lines(&mut child) {
        let line = line.unwrap();
        taken.extend(marked_id(&line, TAKEN));
        if line.contains(HOLDING) {
            break;
        }
    }
    assert_eq!(taken, ids(&sent));
    // The other process holds them, alive: this one may not take them.
    assert!(matches!(bus.take("alice"), Err(BusError::Busy { .. })));
    child.kill().unwrap();
    child.wait().unwrap();

    let drained = MessageBus::new(&dir).drain("alice").unwrap();
    assert_eq!(ids(&drained.messages), ids(&sent));
}

#[test]
fn a_process_killed_while_appending_loses_no_message_whose_append_returned() {
    let dir = tempfile::tempdir().unwrap();
    let dir = mailboxes(dir.path());
    let mut child = spawn_child(
        "team_bus::appender_process",
        &dir,
        &[
            (SENDER_VAR, "doomed".to_string()),
            (COUNT_VAR, "100000".to_string()),
        ],
    );
    // Somewhere between the 20th and the 219th append.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let kill_after = 20 + (nanos % 200) as usize;
    let mut lines = child_lines(&mut child);
    let mut acknowledged = Vec::new();
    while acknowledged.len() < kill_after {
        let line = lines.next().expect("the appender ended early").unwrap();
        acknowledged.extend(marked_id(&line, APPENDED));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // What it printed before it died also counts.
    for line in lines {
        acknowledged.extend(marked_id(&line.unwrap(), APPENDED));
    }

    let bus = MessageBus::new(&dir);
    let drained = bus.drain("lead").unwrap();
    // At most the append the kill interrupted is torn.
    assert!(drained.skipped.len() <= 1, "{:?}", drained.skipped);
    let delivered = ids(&drained.messages);
    assert_eq!(delivered[..acknowledged.len()], acknowledged[..]);
    for (n, message) in drained.messages.iter().enumerate() {
        assert_eq!(message.content, format!("doomed:{n}"));
    }
    // A torn line left behind does not swallow the next message.
    let next = bus
        .send("bob", "lead", MessageKind::Message, "after the kill")
        .unwrap();
    assert_eq!(ids(&bus.drain("lead").unwrap().messages), [next.id]);
}

#[test]
fn a_torn_or_garbled_line_is_reported_and_skipped_and_later_messages_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let bus = MessageBus::new(mailboxes(dir.path()));
    let inbox = bus.mailbox("alice").unwrap().inbox_path();
    std::fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    let whole = Message::new("bob", "alice", MessageKind::Message, "whole").unwrap();
    let torn = Message::new("bob", "alice", MessageKind::Message, "torn")
        .unwrap()
        .to_line()
        .unwrap();
    let half = &torn[..torn.len() / 2];

    // A torn line at the end, as a writer killed mid-append leaves it.
    std::fs::write(&inbox, format!("{}{half}", whole.to_line().unwrap())).unwrap();
    let drained = bus.drain("alice").unwrap();
    assert_eq!(ids(&drained.messages), [whole.id]);
    assert_eq!(drained.skipped.len(), 1);
    assert_eq!(drained.skipped[0].line, 2);
    assert!(
        drained.skipped[0].reason.contains("torn line at the end"),
        "{}",
        drained.skipped[0]
    );

    // The same, then a garbled line, then a real append: the append ends
    // the torn line first, so only the broken lines are lost.
    std::fs::write(&inbox, format!("not json\n{half}")).unwrap();
    let after = bus
        .send("bob", "alice", MessageKind::Message, "after the tear")
        .unwrap();
    let drained = bus.drain("alice").unwrap();
    assert_eq!(ids(&drained.messages), [after.id]);
    let lines: Vec<usize> = drained.skipped.iter().map(|skipped| skipped.line).collect();
    assert_eq!(lines, [1, 2]);
    assert!(
        drained.skipped[0]
            .to_string()
            .starts_with("alice.inflight-"),
        "{}",
        drained.skipped[0]
    );
}

// ---------------------------------------------------------------- waiting

/// Waits for `name`'s mail, failing instead of hanging if it never comes:
/// with paused time, a wait that never ends would poll forever at full
/// speed.
async fn wait_for(bus: &MessageBus, name: &str) {
    tokio::time::timeout(Duration::from_secs(60), bus.wait(name))
        .await
        .expect("no mail within 60 s")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn wait_returns_at_once_when_there_is_mail() {
    let dir = tempfile::tempdir().unwrap();
    let bus = MessageBus::new(mailboxes(dir.path()));
    bus.send("bob", "alice", MessageKind::Message, "hi")
        .unwrap();
    let start = tokio::time::Instant::now();
    wait_for(&bus, "alice").await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(bus.disk_checks(), 1);
    // Waiting takes nothing.
    wait_for(&bus, "alice").await;
    assert_eq!(bus.drain("alice").unwrap().messages.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn wait_wakes_as_soon_as_another_task_sends() {
    let dir = tempfile::tempdir().unwrap();
    let bus = MessageBus::new(mailboxes(dir.path()));
    let sender = bus.clone();
    let start = tokio::time::Instant::now();
    let send = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        sender
            .send("bob", "alice", MessageKind::Message, "hi")
            .unwrap();
    });
    wait_for(&bus, "alice").await;
    // Polling alone would have looked at 150 ms and then at 350 ms.
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_millis(350),
        "{elapsed:?}"
    );
    send.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_idle_wait_polls_with_backoff_instead_of_spinning() {
    let dir = tempfile::tempdir().unwrap();
    let bus = MessageBus::new(mailboxes(dir.path()));
    let waited = tokio::time::timeout(Duration::from_secs(10), bus.wait("alice")).await;
    assert!(waited.is_err(), "an empty mailbox ended the wait");
    // At 0, 0.05, 0.15, 0.35, 0.75, 1.55 s, then once a second: 14 looks.
    // Polling every 50 ms would be 200.
    let checks = bus.disk_checks();
    assert!((5..=16).contains(&checks), "{checks} disk checks in 10 s");
}

#[tokio::test(start_paused = true)]
async fn wait_sees_a_send_from_another_process_by_polling() {
    let dir = tempfile::tempdir().unwrap();
    let dir = mailboxes(dir.path());
    let bus = MessageBus::new(&dir);
    // A bus of its own shares no wake-ups, just like another process.
    let elsewhere = MessageBus::new(&dir);
    let start = tokio::time::Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        elsewhere
            .send("bob", "alice", MessageKind::Message, "hi")
            .unwrap();
    });
    wait_for(&bus, "alice").await;
    let elapsed = start.elapsed();
    assert!(
        elapsed > Duration::from_secs(2) && elapsed <= Duration::from_secs(3),
        "{elapsed:?}"
    );
}

// ---------------------------------------------------------------- format and names

#[test]
fn a_message_is_one_json_line_in_the_course_format() {
    let message = Message::new("lead", "alice", MessageKind::ShutdownRequest, "wrap up")
        .unwrap()
        .with_request_id("req_0001");
    let line = message.to_line().unwrap();
    assert_eq!(line.matches('\n').count(), 1);
    assert!(line.ends_with('\n'));
    let json: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(json["type"], "shutdown_request");
    assert_eq!(json["from"], "lead");
    assert_eq!(json["to"], "alice");
    assert_eq!(json["content"], "wrap up");
    assert_eq!(json["request_id"], "req_0001");
    assert!(json.get("approve").is_none());
    assert!(json["ts"].as_f64().unwrap() > 1.0e9);
    let back: Message = serde_json::from_str(&line).unwrap();
    assert_eq!(back, message);
    // Ids differ even between messages made in the same instant.
    let other = Message::new("lead", "alice", MessageKind::Message, "x").unwrap();
    assert_ne!(other.id, message.id);
}

#[test]
fn agent_names_that_cannot_be_file_names_are_refused() {
    for good in ["alice", "team-lead_2", &"a".repeat(32)] {
        validate_name(good).unwrap();
    }
    assert_eq!(validate_name(""), Err(NameError::Empty));
    assert!(matches!(
        validate_name(&"a".repeat(33)),
        Err(NameError::TooLong { len: 33, .. })
    ));
    for (bad, found) in [("../x", '.'), ("a/b", '/'), ("a b", ' '), ("é", 'é')] {
        assert_eq!(
            validate_name(bad),
            Err(NameError::BadChar {
                name: bad.to_string(),
                found
            })
        );
    }
    let error = validate_name("../x").unwrap_err().to_string();
    assert!(error.contains("`../x`") && error.contains("'.'"), "{error}");

    // Nothing is written for a refused name, in either direction.
    let dir = tempfile::tempdir().unwrap();
    let bus = MessageBus::new(mailboxes(dir.path()));
    for bad in ["../x", "a/b", ""] {
        assert!(matches!(
            bus.send("bob", bad, MessageKind::Message, "hi"),
            Err(BusError::Name(_))
        ));
        assert!(matches!(
            bus.send(bad, "bob", MessageKind::Message, "hi"),
            Err(BusError::Name(_))
        ));
        assert!(bus.drain(bad).is_err());
    }
    assert!(!dir.path().join("x.jsonl").exists());
    assert!(bus.names().unwrap().is_empty());

    bus.send("bob", "alice", MessageKind::Message, "hi")
        .unwrap();
    bus.send("alice", "bob", MessageKind::Message, "hi")
        .unwrap();
    bus.drain("alice").unwrap();
    assert_eq!(bus.names().unwrap(), ["alice", "bob"]);
}

#[test]
fn a_message_for_another_agent_is_not_appended_to_this_mailbox() {
    let dir = tempfile::tempdir().unwrap();
    let bus = MessageBus::new(mailboxes(dir.path()));
    let message = Message::new("bob", "alice", MessageKind::Message, "hi").unwrap();
    let error = bus.mailbox("carol").unwrap().append(&message).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "message `{}` is addressed to `alice`, not to `carol`",
            message.id
        )
    );
    let mut anonymous = message.clone();
    anonymous.id.clear();
    assert!(matches!(
        bus.send_message(anonymous),
        Err(BusError::MissingId { .. })
    ));
}

// ---------------------------------------------------------------- protocols

#[test]
fn a_request_is_answered_once_and_every_bad_reply_changes_nothing() {
    let protocols = Protocols::new();
    let shutdown = protocols
        .open(RequestKind::Shutdown, "lead", "alice", "wrap up")
        .unwrap();
    let plan = protocols
        .open(RequestKind::PlanApproval, "bob", "lead", "1. read 2. edit")
        .unwrap();
    assert_eq!(shutdown.request_id, "req_0001");
    assert_eq!(plan.request_id, "req_0002");
    assert_eq!(shutdown.status, RequestStatus::Pending);
    assert_eq!(protocols.pending_for("alice").len(), 1);
    assert_eq!(protocols.pending_for("alice")[0], shutdown);

    let refused = [
        (
            protocols.respond("req_0009", RequestKind::Shutdown, "alice", true, ""),
            "no request has id `req_0009`",
        ),
        (
            protocols.respond("req_0001", RequestKind::PlanApproval, "alice", true, ""),
            "`req_0001` is a shutdown request; a plan approval response cannot answer it",
        ),
        (
            protocols.respond("req_0001", RequestKind::Shutdown, "bob", true, ""),
            "`bob` cannot answer `req_0001`: it was sent to `alice`",
        ),
    ];
    for (result, message) in refused {
        assert_eq!(result.unwrap_err().to_string(), message);
    }
    assert_eq!(protocols.get("req_0001").unwrap(), shutdown);

    let transition = protocols
        .respond("req_0001", RequestKind::Shutdown, "alice", true, "done")
        .unwrap();
    assert_eq!(transition.before, RequestStatus::Pending);
    assert_eq!(transition.request.status, RequestStatus::Approved);
    assert_eq!(transition.request.feedback.as_deref(), Some("done"));

    // A second reply, even a different one, is refused and changes nothing.
    let duplicate = protocols
        .respond("req_0001", RequestKind::Shutdown, "alice", false, "no")
        .unwrap_err();
    assert_eq!(
        duplicate,
        ProtocolError::AlreadyAnswered {
            request_id: "req_0001".to_string(),
            status: RequestStatus::Approved,
        }
    );
    assert!(duplicate.to_string().contains("already approved"));
    assert_eq!(protocols.get("req_0001").unwrap(), transition.request);
    assert!(protocols.pending_for("alice").is_empty());
    assert_eq!(protocols.list().len(), 2);
}

#[test]
fn a_plan_is_rejected_and_approved_through_response_messages() {
    let protocols = Protocols::new();
    let plan = protocols
        .open(
            RequestKind::PlanApproval,
            "bob",
            "lead",
            "rewrite everything",
        )
        .unwrap();
    let request = plan.to_message().unwrap();
    assert_eq!(request.kind, MessageKind::PlanApprovalRequest);
    assert_eq!(request.request_id.as_deref(), Some("req_0001"));

    let mut gate = PlanGate::new(true);
    gate.submitted(&plan.request_id);

    let no = plan.reply(false, "too broad").unwrap();
    assert_eq!((no.from.as_str(), no.to.as_str()), ("lead", "bob"));
    let rejected = protocols.respond_to(&no).unwrap();
    assert_eq!(rejected.request.status, RequestStatus::Rejected);
    assert!(gate.apply(&rejected));
    assert_eq!(gate.status(), &PlanStatus::Rejected);
    // The same answer again is a duplicate.
    assert!(matches!(
        protocols.respond_to(&no),
        Err(ProtocolError::AlreadyAnswered { .. })
    ));
    // A shutdown response cannot answer a plan.
    let mut wrong_kind = no.clone();
    wrong_kind.kind = MessageKind::ShutdownResponse;
    assert!(matches!(
        protocols.respond_to(&wrong_kind),
        Err(ProtocolError::KindMismatch { .. })
    ));

    let revised = protocols
        .open(RequestKind::PlanApproval, "bob", "lead", "fix one bug")
        .unwrap();
    gate.submitted(&revised.request_id);
    // A late answer to the replaced plan does not open the gate.
    assert!(!gate.apply(&rejected));
    let approved = protocols
        .respond_to(&revised.reply(true, "").unwrap())
        .unwrap();
    assert_eq!(approved.request.status, RequestStatus::Approved);
    assert_eq!(approved.request.feedback, None);
    assert!(gate.apply(&approved));
    assert_eq!(gate.status(), &PlanStatus::Approved);
}

#[test]
fn the_plan_gate_blocks_changes_until_the_plan_is_approved() {
    let protocols = Protocols::new();
    let mut gate = PlanGate::new(true);
    let blocked = ["bash", "write_file", "edit_file"];
    for tool in blocked {
        let refusal = gate.allows(tool).unwrap_err().to_string();
        assert!(
            refusal.starts_with("Blocked: plan status is required;"),
            "{refusal}"
        );
        assert!(refusal.contains("submit_plan"), "{refusal}");
    }
    gate.allows("read_file").unwrap();

    let plan = protocols
        .open(RequestKind::PlanApproval, "alice", "lead", "the plan")
        .unwrap();
    gate.submitted(&plan.request_id);
    for tool in blocked {
        let refusal = gate.allows(tool).unwrap_err().to_string();
        assert!(
            refusal.starts_with("Blocked: plan status is pending (req_0001);"),
            "{refusal}"
        );
        assert!(refusal.contains(&format!("`{tool}`")), "{refusal}");
    }
    gate.allows("read_file").unwrap();

    // Another request's answer does not move the gate.
    let shutdown = protocols
        .open(RequestKind::Shutdown, "lead", "alice", "stop")
        .unwrap();
    let stop = protocols
        .respond(
            &shutdown.request_id,
            RequestKind::Shutdown,
            "alice",
            true,
            "",
        )
        .unwrap();
    assert!(!gate.apply(&stop));
    assert!(gate.allows("bash").is_err());

    let approved = protocols
        .respond(
            &plan.request_id,
            RequestKind::PlanApproval,
            "lead",
            true,
            "go",
        )
        .unwrap();
    assert!(gate.apply(&approved));
    for tool in blocked.iter().chain(&["read_file"]) {
        gate.allows(tool).unwrap();
    }
    for tool in blocked.iter().chain(&["read_file"]) {
        PlanGate::new(false).allows(tool).unwrap();
    }
}

#[test]
fn a_plan_not_yet_approved_lets_only_read_only_tools_through() {
    let mut gate = PlanGate::new(true);
    gate.submitted("req_0001");
    // Tools that change something, whichever lesson adds them, and any
    // tool nobody declared read-only (an MCP server's) wait for approval.
    for tool in [
        "bash",
        "create_task",
        "claim_task",
        "complete_task",
        "schedule_cron",
        "create_worktree",
        "mcp__docs__search",
        "a_tool_added_later",
    ] {
        let refusal = gate.allows(tool).unwrap_err().to_string();
        assert!(
            refusal.starts_with("Blocked: plan status is pending (req_0001);"),
            "{tool}: {refusal}"
        );
    }
    // Reading, listing, and talking to the lead still work.
    for tool in [
        "read_file",
        "glob",
        "list_tasks",
        "get_task",
        "send_message",
        "submit_plan",
    ] {
        gate.allows(tool).unwrap();
    }
    // A plan the lead asks for later closes an open gate the same way.
    let mut open = PlanGate::new(false);
    open.allows("create_task").unwrap();
    open.require();
    assert_eq!(open.status(), &PlanStatus::Required);
    assert!(open.allows("create_task").is_err());
    open.allows("read_file").unwrap();
}
