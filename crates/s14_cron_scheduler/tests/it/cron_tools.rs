//! The cron scheduler in the agent (lesson 14): the three tools through the
//! dispatch map, the durable file, the queue that delivers `[Scheduled] …`
//! only when the agent is idle, and the ticker task.
//!
//! Time is injected everywhere: a `ManualClock` the tests move by hand,
//! or, for the ticker task, a clock that follows tokio's paused time.

use std::sync::Arc;

use jiff::tz::{self, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};
use lesson::cron::store::FILE_NAME;
use lesson::cron::{Clock, CronJob, CronScheduler, ManualClock};
use serde_json::json;
use shared::history::validate;
use shared::hooks::Hooks;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::notice::Notices;
use shared::protocol::Message;

use crate::support;

/// `text` (RFC 3339, e.g. `2026-12-01T10:02:30Z`) in a fixed UTC+1 zone.
fn at(text: &str) -> ZonedDateTime {
    text.parse::<Timestamp>()
        .unwrap()
        .to_zoned_datetime(TimeZone::fixed(tz::offset(1)))
}

/// The lesson's agent in `dir`, on `clock`, playing `replies`.
fn agent_on(
    dir: &std::path::Path,
    clock: Arc<dyn Clock>,
    replies: Vec<Reply>,
) -> (
    shared::agent::Agent<lesson::LessonHooks>,
    Arc<ScriptedModel>,
) {
    let model = Arc::new(ScriptedModel::new(replies));
    let options = lesson::Options {
        clock,
        ..support::options()
    };
    (support::agent_with(dir, model.clone(), options), model)
}

/// The tool results of a history, as (text, is_error).
fn results(history: &[Message]) -> Vec<(String, bool)> {
    history
        .iter()
        .flat_map(Message::tool_results)
        .map(|result| (result.text(), result.is_error))
        .collect()
}

/// Whether idle work is ready right now (polled once, not awaited).
async fn ready_now(agent: &mut shared::agent::Agent<lesson::LessonHooks>) -> Option<String> {
    tokio::select! {
        biased;
        work = agent.hooks_mut().idle_work() => Some(work),
        () = std::future::ready(()) => None,
    }
}

#[tokio::test]
async fn jobs_are_scheduled_listed_and_cancelled_through_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at("2026-12-01T10:02:30Z")));
    let (mut agent, _) = agent_on(
        dir.path(),
        clock,
        vec![
            Reply::tool(
                "schedule_cron",
                json!({"cron": "*/5 * * * *", "prompt": "check the build"}),
            )
            .and_tool(
                "schedule_cron",
                json!({"cron": "0 9 * * 1-5", "prompt": "summarise new issues", "recurring": false, "durable": true}),
            )
            .and_tool("list_crons", json!({}))
            .and_tool("cancel_cron", json!({"job_id": "cron_0001"}))
            .and_tool("list_crons", json!({})),
            Reply::text("done"),
        ],
    );
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let results = results(&history);
    assert!(results.iter().all(|(_, error)| !error), "{results:?}");
    // 10:02:30Z is 11:02:30 in UTC+1: the next five-minute mark is 11:05,
    // and 2026-12-02 is a Wednesday.
    assert_eq!(
        results[0].0,
        "Scheduled cron_0001 '*/5 * * * *' (recurring, session), next \
         2026-12-01T11:05:00+01:00: check the build"
    );
    assert_eq!(
        results[1].0,
        "Scheduled cron_0002 '0 9 * * 1-5' (one-shot, durable), next \
         2026-12-02T09:00:00+01:00: summarise new issues"
    );
    assert_eq!(
        results[2].0,
        format!(
            "{}\n{}",
            &results[0].0["Scheduled ".len()..],
            &results[1].0["Scheduled ".len()..]
        )
    );
    assert!(
        results[3].0.starts_with("Cancelled cron_0001"),
        "{}",
        results[3].0
    );
    assert_eq!(results[4].0, &results[1].0["Scheduled ".len()..]);
    assert_eq!(
        recorder.notices_tagged("cron"),
        [
            "scheduled cron_0001: */5 * * * *",
            "scheduled cron_0002: 0 9 * * 1-5",
            "cancelled cron_0001"
        ]
    );
    // Only the durable job is on disk.
    let saved: Vec<CronJob> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap())
            .unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].id, "cron_0002");
    assert!(saved[0].durable && !saved[0].recurring);
}

#[tokio::test]
async fn a_bad_expression_or_an_unknown_job_is_an_error_the_model_can_act_on() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at("2026-12-01T10:02:30Z")));
    let (mut agent, _) = agent_on(
        dir.path(),
        clock,
        vec![
            Reply::tool(
                "schedule_cron",
                json!({"cron": "61 * * * *", "prompt": "x"}),
            )
            .and_tool("schedule_cron", json!({"cron": "* * * *", "prompt": "x"}))
            .and_tool(
                "schedule_cron",
                json!({"cron": "* * * * *", "prompt": "  "}),
            )
            .and_tool("schedule_cron", json!({"cron": "* * * * *"}))
            .and_tool("cancel_cron", json!({"job_id": "cron_0042"}))
            .and_tool("list_crons", json!({})),
            Reply::text("done"),
        ],
    );
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();
    let results = results(&history);
    for (text, error) in &results[..5] {
        assert!(error, "{text}");
    }
    assert!(
        results[0]
            .0
            .starts_with("Invalid cron expression \"61 * * * *\": minute: 61"),
        "{}",
        results[0].0
    );
    assert!(
        results[1].0.contains("expected 5 fields"),
        "{}",
        results[1].0
    );
    assert!(results[2].0.contains("prompt is empty"), "{}", results[2].0);
    assert!(
        results[3].0.contains("Invalid input for schedule_cron"),
        "{}",
        results[3].0
    );
    assert_eq!(results[4].0, "No cron job cron_0042; no jobs are scheduled");
    assert_eq!(
        results[5],
        ("No cron jobs are scheduled.".to_string(), false)
    );
    assert!(
        !dir.path().join(FILE_NAME).exists(),
        "nothing durable was made"
    );
}

#[tokio::test]
async fn a_job_that_comes_due_is_delivered_when_idle_as_a_scheduled_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at("2026-12-01T10:02:30Z")));
    let (mut agent, model) = agent_on(
        dir.path(),
        clock.clone(),
        vec![
            Reply::tool(
                "schedule_cron",
                json!({"cron": "*/5 * * * *", "prompt": "check the build"}),
            ),
            Reply::text("scheduled"),
            Reply::text("the build is fine"),
        ],
    );
    let mut history = Vec::new();
    support::turn(
        &mut agent,
        &mut history,
        "every five minutes, check the build",
    )
    .await
    .0
    .unwrap();

    // Not due yet: ticking at 11:04 queues nothing.
    clock.set(at("2026-12-01T10:04:59Z"));
    assert_eq!(agent.hooks().cron().tick(), 0);
    assert_eq!(ready_now(&mut agent).await, None);

    // 11:05: due. The queue holds it until the agent is idle.
    clock.set(at("2026-12-01T10:05:00Z"));
    assert_eq!(agent.hooks().cron().tick(), 1);
    assert_eq!(agent.hooks().cron().tick(), 0, "once per minute mark");
    let work = ready_now(&mut agent).await.expect("due work is ready");
    assert_eq!(work, "[Scheduled] check the build");
    assert_eq!(ready_now(&mut agent).await, None, "delivered once");

    // The front end sends it as the next user message.
    let (outcome, _) = support::turn(&mut agent, &mut history, &work).await;
    assert_eq!(outcome.unwrap().final_text, "the build is fine");
    validate(&history).unwrap();
    let last = model.requests().pop().unwrap();
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"][0]["text"],
        "[Scheduled] check the build"
    );
    // A recurring job stays.
    assert_eq!(agent.hooks().cron().list().len(), 1);
}

#[tokio::test]
async fn durable_jobs_survive_a_restart_and_bad_entries_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(FILE_NAME),
        r#"[
  {"id": "cron_0003", "cron": "0 9 * * *", "prompt": "standup notes", "recurring": true, "durable": true},
  {"id": "cron_0001", "cron": "99 * * * *", "prompt": "bad minute", "recurring": true, "durable": true},
  {"id": "cron_0002", "prompt": "no expression", "recurring": true, "durable": true}
]"#,
    )
    .unwrap();
    // 08:29:30 local.
    let clock = Arc::new(ManualClock::new(at("2026-12-01T07:29:30Z")));
    let (mut agent, _) = agent_on(
        dir.path(),
        clock.clone(),
        vec![
            Reply::tool(
                "schedule_cron",
                json!({"cron": "30 8 * * *", "prompt": "once", "recurring": false, "durable": true}),
            ),
            Reply::text("ok"),
        ],
    );
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    let notices = recorder.notices_tagged("cron");
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("skipped:") && n.contains("cron_0001")),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("skipped:") && n.contains("cron_0002")),
        "{notices:?}"
    );
    assert!(notices.contains(&"loaded 1 durable job from .scheduled_tasks.json".to_string()));
    // The file as it was is kept, since the next save drops what did not load.
    let backup = std::fs::read_to_string(dir.path().join(".scheduled_tasks.json.bak")).unwrap();
    assert!(backup.contains("bad minute") && backup.contains("no expression"));
    // Ids continue after the loaded ones.
    let scheduled = &results(&history)[0].0;
    assert!(
        scheduled.starts_with(
            "Scheduled cron_0004 '30 8 * * *' (one-shot, durable), next 2026-12-01T08:30:00+01:00"
        ),
        "{scheduled}"
    );
    let on_disk = |dir: &std::path::Path| -> Vec<String> {
        let jobs: Vec<CronJob> =
            serde_json::from_str(&std::fs::read_to_string(dir.join(FILE_NAME)).unwrap()).unwrap();
        jobs.into_iter().map(|job| job.id).collect()
    };
    assert_eq!(on_disk(dir.path()), ["cron_0003", "cron_0004"]);

    // The one-shot fires at 08:30 local and leaves the schedule. It leaves
    // the file when it is delivered, so the next session does not fire it
    // again.
    clock.set(at("2026-12-01T07:30:00Z"));
    assert_eq!(agent.hooks().cron().tick(), 1);
    assert_eq!(agent.hooks().cron().queued()[0].prompt, "once");
    assert_eq!(ready_now(&mut agent).await.unwrap(), "[Scheduled] once");
    assert_eq!(on_disk(dir.path()), ["cron_0003"]);

    // A new session in the same workspace finds the durable job, with its
    // next fire time at 09:00 local.
    drop(agent);
    let (again, _) = agent_on(dir.path(), clock.clone(), vec![]);
    let listed = again.hooks().cron().list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].job.id, "cron_0003");
    assert_eq!(listed[0].next, Some(at("2026-12-01T08:00:00Z")));
}

/// The ids of the jobs in the durable file of `dir`.
fn ids_on_disk(dir: &std::path::Path) -> Vec<String> {
    let jobs: Vec<CronJob> =
        serde_json::from_str(&std::fs::read_to_string(dir.join(FILE_NAME)).unwrap()).unwrap();
    jobs.into_iter().map(|job| job.id).collect()
}

#[tokio::test]
async fn a_durable_one_shot_job_stays_on_disk_until_it_is_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at("2026-12-01T10:02:30Z")));
    let cron = CronScheduler::new(dir.path(), clock.clone(), Notices::new());
    cron.schedule("5 11 * * *", "once, at 11:05", false, true)
        .unwrap();
    clock.set(at("2026-12-01T10:05:00Z"));
    assert_eq!(cron.tick(), 1);
    // Fired, not delivered: a crash now must not lose it.
    assert!(cron.list().is_empty());
    assert_eq!(ids_on_disk(dir.path()), ["cron_0001"]);
    // Delivered: gone, so the next session does not fire it again.
    assert_eq!(cron.next_due().await.prompt, "once, at 11:05");
    assert_eq!(ids_on_disk(dir.path()), Vec::<String>::new());
}

#[tokio::test]
async fn two_processes_saving_durable_cron_jobs_in_one_workspace_keep_all_jobs_with_distinct_ids() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at("2026-12-01T10:02:30Z")));
    // Two sessions, each with its own memory, as two processes have.
    let a = CronScheduler::new(dir.path(), clock.clone(), Notices::new());
    let b = CronScheduler::new(dir.path(), clock.clone(), Notices::new());
    let id = |scheduler: &CronScheduler, prompt: &str, durable: bool| {
        scheduler
            .schedule("0 9 * * *", prompt, true, durable)
            .unwrap()
            .job
            .id
    };
    let a1 = id(&a, "a1", true);
    let b1 = id(&b, "b1", true);
    let b2 = id(&b, "b2 (session)", false);
    let a2 = id(&a, "a2", true);
    let b3 = id(&b, "b3", true);
    let durable = [&a1, &b1, &a2, &b3];
    let distinct: std::collections::BTreeSet<_> = durable.iter().collect();
    assert_eq!(distinct.len(), durable.len(), "{durable:?}");
    // A session-only job is never saved, but its id still comes after
    // every id saved before it.
    assert!(![&a1, &b1].contains(&&b2), "{b2} repeats a saved id");
    assert_eq!(ids_on_disk(dir.path()), [&*a1, &*b1, &*a2, &*b3]);
    // Cancelling one session's job keeps the other's; either session may
    // cancel a job the other saved.
    b.cancel(&b1).unwrap();
    assert_eq!(ids_on_disk(dir.path()), [&*a1, &*a2, &*b3]);
    a.cancel(&b3).unwrap();
    assert_eq!(ids_on_disk(dir.path()), [&*a1, &*a2]);
    // A third session loads everything that is left.
    let c = CronScheduler::new(dir.path(), clock, Notices::new());
    let loaded: Vec<String> = c.list().into_iter().map(|listed| listed.job.id).collect();
    assert_eq!(loaded, [a1, a2]);
}

/// The environment variables that turn [`cron_saver_process`] on.
const SAVER_DIR: &str = "CRON_TEST_SAVER_DIR";
const SAVER_NAME: &str = "CRON_TEST_SAVER_NAME";
const SAVERS: usize = 4;
const JOBS_PER_SAVER: usize = 10;
/// What a saver process prints once its scheduler has loaded the file.
const SAVER_READY: &str = "cron saver ready";

/// Not a test of its own: the body of each saver *process* in the test
/// below, which runs this test binary again with only this test selected.
#[test]
#[ignore = "run as a child process by durable_jobs_saved_by_real_processes_are_all_kept"]
fn cron_saver_process() {
    use std::io::{BufRead, Write};
    let (Ok(dir), Ok(name)) = (std::env::var(SAVER_DIR), std::env::var(SAVER_NAME)) else {
        return;
    };
    let clock = Arc::new(ManualClock::new(at("2026-12-01T10:02:30Z")));
    // Loaded before any process saves: each starts with the same (empty)
    // view of the file, as two sessions started together do.
    let cron = CronScheduler::new(std::path::Path::new(&dir), clock, Notices::new());
    println!("{SAVER_READY}");
    std::io::stdout().flush().unwrap();
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).unwrap();
    for n in 0..JOBS_PER_SAVER {
        cron.schedule("0 9 * * *", &format!("{name} {n}"), true, true)
            .unwrap();
    }
}

#[test]
fn durable_jobs_saved_by_real_processes_are_all_kept() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    // Each process loads the (empty) file, says so, and waits at a gate (a
    // line on standard input), so that all of them save at the same time.
    let mut savers: Vec<_> = (0..SAVERS)
        .map(|n| {
            let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "cron_tools::cron_saver_process",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(SAVER_DIR, dir.path())
                .env(SAVER_NAME, format!("saver-{n}"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            (child, stdout)
        })
        .collect();
    // The test harness writes its own words on the same lines, so the
    // marker is searched for, not expected alone.
    for (_, stdout) in &mut savers {
        let mut line = String::new();
        while !line.contains(SAVER_READY) {
            line.clear();
            let read = stdout.read_line(&mut line).unwrap();
            assert!(read > 0, "a saver ended before it was ready");
        }
    }
    for (child, _) in &mut savers {
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    for (mut child, mut stdout) in savers {
        // Read to the end before waiting, so the harness never writes to a
        // closed pipe.
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        assert!(child.wait().unwrap().success(), "{rest}");
    }
    let jobs: Vec<CronJob> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap())
            .unwrap();
    let prompts: std::collections::BTreeSet<_> = jobs.iter().map(|job| &job.prompt).collect();
    let ids: std::collections::BTreeSet<_> = jobs.iter().map(|job| &job.id).collect();
    assert_eq!(jobs.len(), SAVERS * JOBS_PER_SAVER, "{prompts:?}");
    assert_eq!(prompts.len(), jobs.len());
    assert_eq!(ids.len(), jobs.len(), "two jobs share an id");
}

/// A clock that follows tokio's (paused) time from a fixed start.
struct TokioClock {
    start: ZonedDateTime,
    origin: tokio::time::Instant,
}

impl Clock for TokioClock {
    fn now(&self) -> ZonedDateTime {
        let elapsed = SignedDuration::try_from(self.origin.elapsed()).unwrap();
        self.start.checked_add(elapsed).unwrap()
    }
}

#[tokio::test(start_paused = true)]
async fn the_ticker_fires_at_each_minute_mark_while_the_agent_waits() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TokioClock {
        start: at("2026-12-01T10:02:30Z"),
        origin: tokio::time::Instant::now(),
    });
    let (mut agent, _) = agent_on(
        dir.path(),
        clock,
        vec![
            Reply::tool(
                "schedule_cron",
                json!({"cron": "* * * * *", "prompt": "tick", "recurring": false}),
            )
            .and_tool(
                "schedule_cron",
                json!({"cron": "*/2 * * * *", "prompt": "every other minute"}),
            ),
            Reply::text("ok"),
        ],
    );
    let mut history = Vec::new();
    support::turn(&mut agent, &mut history, "go")
        .await
        .0
        .unwrap();

    // Paused time jumps to each timer: 11:03 fires the one-shot, 11:04 the
    // two-minute job, 11:06 it again; the one-shot never returns.
    let start = tokio::time::Instant::now();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let work = agent.hooks_mut().idle_work().await;
        seen.push((work, start.elapsed().as_secs()));
    }
    assert_eq!(
        seen,
        [
            ("[Scheduled] tick".to_string(), 30),
            ("[Scheduled] every other minute".to_string(), 90),
            ("[Scheduled] every other minute".to_string(), 210),
        ]
    );
}
