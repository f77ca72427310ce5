//! Autonomous teammates (lesson 16): idle teammates scan the task board and
//! claim what can start, each task is done exactly once and never before
//! its dependencies, an empty board keeps them idle and quiet, and a task
//! whose owner died is reclaimed when its lease runs out, with the lead
//! told.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lesson::tasks::{Status, TASKS_DIR, Task, TaskBoard};
use lesson::team::Autonomy;
use lesson::team::scripts::{AgentScript, AgentScripts};
use serde_json::json;
use shared::agent::Agent;
use shared::hooks::Hooks;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::notice::Notices;

use crate::support;

/// How long a test waits for the team (real time; not a speed assertion).
const DEADLINE: Duration = Duration::from_secs(60);

fn teammate(name: &str) -> String {
    format!("You are teammate `{name}`")
}

/// The lead spawns `names`; each teammate answers its first assignment,
/// then completes whatever it is given, up to `tasks` times.
fn team(
    dir: &Path,
    names: &[&str],
    tasks: usize,
    autonomy: Autonomy,
) -> Agent<lesson::LessonHooks> {
    let spawn = names.iter().fold(Reply::text("Starting."), |reply, name| {
        reply.and_tool(
            "spawn_teammate",
            json!({"name": name, "role": "worker", "prompt": "Work through the task board."}),
        )
    });
    let agents = names.iter().map(|name| {
        let mut replies = vec![Reply::text("Ready.")];
        for _ in 0..tasks {
            replies.push(Reply::tool("complete_task", json!({})));
            replies.push(Reply::text("Done."));
        }
        AgentScript::new(teammate(name), replies)
    });
    let model = Arc::new(AgentScripts::new(
        ScriptedModel::new(vec![spawn, Reply::text("The team is on the board.")]),
        agents,
    ));
    let options = lesson::Options {
        autonomy,
        ..support::options()
    };
    support::agent_with(dir, model, options)
}

fn board(dir: &Path) -> TaskBoard {
    TaskBoard::new(dir.join(TASKS_DIR), Notices::new())
}

// ANCHOR: acceptance
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_teammates_complete_thirty_tasks_each_once_and_never_before_their_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    // Three chains (task n waits for n-3), and every fifth task also waits
    // for the one before it, across chains.
    let tasks = board(dir.path());
    for n in 1..=30 {
        let mut blocked_by = Vec::new();
        if n > 3 {
            blocked_by.push((n - 3).to_string());
        }
        if n % 5 == 0 {
            blocked_by.push((n - 1).to_string());
        }
        tasks.create(&format!("task {n}"), "", &blocked_by).unwrap();
    }
    let fast = Autonomy {
        scan_first: Duration::from_millis(5),
        scan_max: Duration::from_millis(40),
        ..Autonomy::default()
    };
    let mut agent = team(dir.path(), &["t1", "t2", "t3"], 30, fast);
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();

    // The board's own reports, in the order they happened. Those made while
    // the lead's turn still ran went to its observer (on a loaded machine
    // the teammates may claim and finish several tasks by then); the rest
    // are taken from the queue as they come: it keeps only the newest
    // notices, and a loaded machine gives the teammates time for many scans
    // (and their notices) while they wait on dependencies. A teammate
    // reports a completion just after writing it, so the files may say
    // "completed" before the last report is out: wait for both.
    let mut reports: Vec<String> = recorder
        .notices
        .into_iter()
        .filter(|notice| notice.tag == "tasks")
        .map(|notice| notice.text)
        .collect();
    let done = tokio::time::timeout(DEADLINE, async {
        loop {
            reports.extend(
                agent
                    .notices()
                    .take()
                    .into_iter()
                    .filter(|notice| notice.tag == "tasks")
                    .map(|notice| notice.text),
            );
            let completions = reports
                .iter()
                .filter(|text| text.starts_with("completed "))
                .count();
            let all = tasks.list();
            if completions >= 30 && all.iter().all(|task| task.status == Status::Completed) {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the team finishes the board, and every completion is reported");
    assert_eq!(done.len(), 30);
    let position = |needle: &str| -> Vec<usize> {
        reports
            .iter()
            .enumerate()
            .filter(|(_, text)| text.contains(needle))
            .map(|(index, _)| index)
            .collect()
    };
    let by_id: BTreeMap<String, Task> = done.into_iter().map(|t| (t.id.clone(), t)).collect();
    let mut owners = BTreeMap::new();
    for (id, task) in &by_id {
        let completed = position(&format!("completed {id}: "));
        assert_eq!(completed.len(), 1, "task {id} completed once: {reports:#?}");
        let claimed = position(&format!(" claimed {id}: "));
        assert_eq!(claimed.len(), 1, "task {id} claimed once");
        for dep in &task.blocked_by {
            let dep_done = position(&format!("completed {dep}: "))[0];
            assert!(
                claimed[0] > dep_done,
                "task {id} was claimed before its dependency {dep} was completed"
            );
        }
        assert_eq!(task.lease_until, None, "a completed task holds no lease");
        *owners.entry(task.owner.clone().unwrap()).or_insert(0) += 1;
    }
    assert!(owners.len() >= 2, "the work was shared: {owners:?}");
}
// ANCHOR_END: acceptance

#[tokio::test(start_paused = true)]
async fn an_empty_board_keeps_the_team_idle_and_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = team(dir.path(), &["t1", "t2", "t3"], 0, Autonomy::default());
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    // Ten minutes of (paused, auto-advancing) time with nothing to do.
    tokio::time::sleep(Duration::from_secs(600)).await;
    let scans = agent.hooks().team().shared().scans.get();
    // With pauses doubling from 1 s to 30 s, about 24 scans a teammate.
    assert!(scans > 3, "they looked: {scans}");
    assert!(scans <= 3 * 30, "they did not spin: {scans} scans");
    for member in agent.hooks().team().list() {
        assert_eq!(member.status, lesson::team::Status::Idle, "{member:?}");
    }
}

/// Waits (in the test's paused time) until every teammate is idle.
async fn until_idle(agent: &Agent<lesson::LessonHooks>) {
    while agent
        .hooks()
        .team()
        .list()
        .iter()
        .any(|member| member.status != lesson::team::Status::Idle)
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Waits (in paused time) until task `id` has an owner, and returns it.
async fn until_owned(tasks: &TaskBoard, id: &str) -> String {
    loop {
        if let Some(owner) = tasks.get(id).ok().and_then(|task| task.owner) {
            return owner;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

// The clock is tokio's paused one: every pause below is the teammate's own
// timer firing, not the test waiting on the wall.
#[tokio::test(start_paused = true)]
async fn an_idle_teammate_reads_the_board_once_a_pause_and_claims_new_work_at_its_next_scan() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = board(dir.path());
    let every = Duration::from_secs(2);
    let steady = Autonomy {
        scan_first: every,
        scan_max: every,
        ..Autonomy::default()
    };
    let mut agent = team(dir.path(), &["t1"], 1, steady);
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    until_idle(&agent).await;
    let scans = agent.hooks().team().shared().scans.clone();

    // Twenty pauses with nothing on the board: about twenty reads, not
    // thousands.
    let before = scans.get();
    tokio::time::sleep(every * 20).await;
    let idle_scans = scans.get() - before;
    assert!(
        (19..=21).contains(&idle_scans),
        "one scan a pause over twenty pauses, not {idle_scans}"
    );

    // Work appears: the next scan claims it, within one pause.
    let before = scans.get();
    let appeared = tokio::time::Instant::now();
    tasks.create("late work", "", &[]).unwrap();
    assert_eq!(until_owned(&tasks, "1").await, "t1");
    let waited = appeared.elapsed();
    let polls = scans.get() - before;
    assert!(waited <= every, "claimed {waited:?} after it appeared");
    assert!(
        (1..=2).contains(&polls),
        "claimed within one or two scans, not {polls}"
    );
}

#[tokio::test(start_paused = true)]
async fn after_a_long_idle_spell_new_work_is_claimed_within_the_longest_pause() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = board(dir.path());
    let autonomy = Autonomy::default();
    let longest = autonomy.scan_max;
    let mut agent = team(dir.path(), &["t1"], 1, autonomy);
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    until_idle(&agent).await;
    // An hour idle: the pause has long reached its maximum, and stays there.
    let scans = agent.hooks().team().shared().scans.clone();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let idle_scans = scans.get();
    // 1 + 2 + 4 + 8 + 16 s, then one scan every 30 s.
    assert!(
        (120..=126).contains(&idle_scans),
        "an hour of idling read the board {idle_scans} times"
    );

    let before = scans.get();
    let appeared = tokio::time::Instant::now();
    tasks.create("late work", "", &[]).unwrap();
    assert_eq!(until_owned(&tasks, "1").await, "t1");
    assert!(
        appeared.elapsed() <= longest,
        "claimed {:?} after it appeared",
        appeared.elapsed()
    );
    assert_eq!(
        scans.get() - before,
        1,
        "the first scan after it appeared claimed it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_owner_died_is_reclaimed_when_its_lease_expires_and_the_lead_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = board(dir.path());
    for subject in ["orphaned", "held", "by hand"] {
        tasks.create(subject, "", &[]).unwrap();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // 1: its owner died ten seconds after its lease ran out; 2: a live
    // lease; 3: claimed by hand, which never expires.
    tasks
        .claim_leased("1", "ghost", now - 700, Duration::from_secs(600))
        .unwrap();
    tasks
        .claim_leased("2", "alive", now, Duration::from_secs(600))
        .unwrap();
    tasks.claim("3", "agent").unwrap();

    let fast = Autonomy {
        scan_first: Duration::from_millis(5),
        scan_max: Duration::from_millis(40),
        ..Autonomy::default()
    };
    let mut agent = team(dir.path(), &["t1"], 1, fast);
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();

    let mut seen = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        while !seen
            .iter()
            .any(|line: &String| line.contains("(result): Done."))
        {
            let events = agent.hooks_mut().idle_work().await;
            seen.extend(events.lines().map(str::to_string));
        }
    })
    .await
    .expect("the teammate reclaims and finishes task 1");
    assert!(
        seen.iter().any(|line| line
            == "t1 → lead (message): Reclaimed task 1 (orphaned) from ghost, whose lease expired."),
        "{seen:#?}"
    );
    let after = board(dir.path());
    assert_eq!(after.get("1").unwrap().status, Status::Completed);
    assert_eq!(after.get("1").unwrap().owner.as_deref(), Some("t1"));
    let two = after.get("2").unwrap();
    assert_eq!(
        (two.status, two.owner.as_deref()),
        (Status::InProgress, Some("alive"))
    );
    let three = after.get("3").unwrap();
    assert_eq!(
        (three.status, three.owner.as_deref()),
        (Status::InProgress, Some("agent"))
    );
}

#[test]
fn a_lease_is_renewed_only_by_its_owner_and_a_reclaim_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = board(dir.path());
    tasks.create("work", "", &[]).unwrap();
    let lease = Duration::from_secs(60);
    tasks.claim_leased("1", "a", 1_000, lease).unwrap();
    // Not expired at 1,059: b cannot take it; a can renew it.
    assert!(tasks.claim_leased("1", "b", 1_059, lease).is_err());
    tasks.renew("1", "a", 1_059, lease).unwrap();
    assert!(
        tasks.claim_leased("1", "b", 1_100, lease).is_err(),
        "renewed to 1,119"
    );
    // Expired at 1,200: b takes it over, and a can no longer renew.
    let taken = tasks.claim_leased("1", "b", 1_200, lease).unwrap();
    assert_eq!(taken.reclaimed_from.as_deref(), Some("a"));
    assert!(tasks.renew("1", "a", 1_201, lease).is_err());
    assert_eq!(tasks.get("1").unwrap().lease_until, Some(1_260));
    // Racing claimers on an expired lease: exactly one wins.
    let winners: Vec<bool> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|n| {
                let tasks = tasks.clone();
                scope.spawn(move || {
                    tasks
                        .claim_leased("1", &format!("c{n}"), 5_000, lease)
                        .is_ok()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(winners.iter().filter(|won| **won).count(), 1);
}
