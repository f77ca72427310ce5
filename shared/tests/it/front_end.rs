//! The terminal front end (`shared::cli`), run as a lesson binary runs it:
//! `-p` with a harness whose turn leaves work running in the background.
//!
//! The front end reads the real standard streams, so it is driven in a
//! child process: this test binary run again (`std::env::current_exe()`)
//! with only the ignored test [`front_end_process`] selected, which calls
//! `shared::cli::run` with the demo model and a tiny harness of its own.
//! The parent reads what the child wrote to its pipes, which are not
//! terminals: progress comes as plain lines.

// Helpers outside `#[test]` functions unwrap too: a failed setup should
// fail the test on the spot.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use shared::cli::{CommonArgs, Lesson};
use shared::hooks::{Hooks, ToolOutput};
use shared::notice::Notices;
use shared::progress::Progress;
use shared::protocol::{ToolSpec, ToolUse};

/// The workspace of the child's run; without it, [`front_end_process`]
/// does nothing (so `cargo test -- --ignored` does not run it on its own).
const WORKDIR_VAR: &str = "SHARED_FRONT_END_WORKDIR";

/// What the demo model says in the two turns: the user's, and the one the
/// finished background work starts.
const DEMO: &str = r#"{
  "replies": [
    { "text": "Started the review in the background." },
    { "text": "The review is done: 2 findings." }
  ]
}"#;

const LESSON: Lesson = Lesson {
    id: "t00",
    title: "front end test",
    demo_script: DEMO,
    demo_model: shared::model::scripted::demo_model,
};

/// The prompt the finished work sends.
const WORK_DONE: &str = "<background>review finished with 2 findings</background>";

/// A harness whose every turn leaves one piece of work pending: waiting
/// for it reports its progress, then hands back its result.
struct Background {
    notices: Notices,
    pending: bool,
}

fn report(running: usize, done: usize, secs: u64, finished: bool) -> Progress {
    Progress {
        id: "run-1".into(),
        status: format!("review · Verify · {running} running · {done} done"),
        meter: "0 tokens".into(),
        elapsed: Duration::from_secs(secs),
        finished,
    }
}

impl Hooks for Background {
    fn tools(&mut self) -> Vec<ToolSpec> {
        // One tool, never called: a request offering none is a side query,
        // which the demo model answers from other rules.
        vec![ToolSpec {
            name: "noop".into(),
            description: "Does nothing.".into(),
            input_schema: serde_json::json!({"type": "object"}),
            cache_control: None,
        }]
    }

    async fn run_tool(&mut self, _call: &ToolUse) -> ToolOutput {
        ToolOutput::error("no tools here")
    }

    fn has_pending_work(&mut self) -> bool {
        self.pending
    }

    fn idle_work(&mut self) -> impl Future<Output = String> + Send {
        self.pending = false;
        let notices = self.notices.clone();
        async move {
            // Each report is seen before the next is made (the wait passes
            // reports on whenever the work yields).
            notices.progress(report(2, 0, 1, false));
            tokio::task::yield_now().await;
            // Only the clock moved: no line for this one.
            notices.progress(report(2, 0, 2, false));
            tokio::task::yield_now().await;
            notices.progress(report(0, 2, 3, true));
            tokio::task::yield_now().await;
            WORK_DONE.to_string()
        }
    }
}

/// The child: runs the front end on the demo model in `-p` mode.
#[test]
#[ignore = "run by one_shot_waits_for_pending_work_and_runs_it_as_a_turn"]
fn front_end_process() {
    let Some(workdir) = std::env::var_os(WORKDIR_VAR) else {
        return;
    };
    let args = CommonArgs {
        demo: true,
        workdir: Some(workdir.into()),
        prompt: Some("review the changes".into()),
        ..CommonArgs::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let code = runtime.block_on(shared::cli::run(LESSON, args, |setup| {
        let hooks = Background {
            notices: setup.notices().clone(),
            pending: true,
        };
        Ok(setup.agent(hooks))
    }));
    // Leave before the test harness prints its summary on standard output.
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 });
}

#[test]
fn one_shot_waits_for_pending_work_and_runs_it_as_a_turn() {
    let workdir = tempfile::tempdir().unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "front_end::front_end_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WORKDIR_VAR, workdir.path())
        // No `.env` of this repository's is read: the child runs where
        // there is none.
        .current_dir(workdir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");

    // Both turns ran, the second after the work was done.
    let first = stdout.find("Started the review in the background.");
    let second = stdout.find("The review is done: 2 findings.");
    assert!(
        first.is_some() && second > first,
        "two turns on stdout:\n{stdout}"
    );

    // Progress, as plain lines on stderr: one per change of substance.
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("[progress]"))
        .collect();
    assert_eq!(
        progress,
        [
            "[progress] review · Verify · 2 running · 0 done · 0 tokens · 1s",
            "[progress] review · Verify · 0 running · 2 done · 0 tokens · 3s · finished",
        ],
        "{stderr}"
    );
}
