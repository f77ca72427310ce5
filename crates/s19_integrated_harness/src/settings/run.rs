//! Running one hook command: `sh -c COMMAND` in the workspace, the event
//! as JSON on its standard input, stopped at its timeout.
//!
//! Synchronous on purpose: lesson 4's hooks are plain closures, and the
//! `UserPromptSubmit` point of the loop is not async. A hook is a short
//! check, and the loop is waiting for its answer anyway; on the binary's
//! multi-threaded runtime the wait is announced to tokio
//! (`block_in_place`), so background commands and teammates carry on
//! while it runs.
//!
//! The command leads a process group of its own, as the `bash` tool's
//! commands do, so that a timeout kills the shell and whatever it started,
//! and the pipes close.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How a hook command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    /// It exited; the code is `None` when a signal ended it.
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// It was still running at the timeout and was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// How often a running hook is looked at. A hook that takes a second is
/// seen to end within this much of it.
const POLL: Duration = Duration::from_millis(5);

// ANCHOR: run
/// Runs `command` in `cwd` with `input` on its standard input, for at most
/// `timeout`.
pub fn run(command: &str, input: &str, cwd: &Path, timeout: Duration) -> Ran {
    let work = || run_blocking(command, input, cwd, timeout);
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}
// ANCHOR_END: run

fn run_blocking(command: &str, input: &str, cwd: &Path, timeout: Duration) -> Ran {
    use std::os::unix::process::CommandExt;
    let spawned = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => return Ran::NotStarted(error.to_string()),
    };
    // Every pipe has its own thread, so a hook that writes a lot before
    // reading its input cannot deadlock with us.
    let stdin = child.stdin.take().map(|mut pipe| {
        let input = input.to_string();
        // A hook that exits without reading closes the pipe: not an error.
        thread::spawn(move || drop(pipe.write_all(input.as_bytes())))
    });
    let stdout = child.stdout.take().map(reader);
    let stderr = child.stderr.take().map(reader);

    // ANCHOR: exercise-s19-wait
    let deadline = Instant::now() + timeout;
    let status: Option<ExitStatus> = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
            Ok(None) | Err(_) => break None,
        }
    };
    // Whatever the shell left running would hold the pipes open: the
    // group goes, on time or not.
    kill_group(child.id());
    let _ = child.wait();
    if let Some(stdin) = stdin {
        let _ = stdin.join();
    }
    let collect = |pipe: Option<thread::JoinHandle<String>>| {
        pipe.and_then(|handle| handle.join().ok())
            .unwrap_or_default()
    };
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    match status {
        Some(status) => Ran::Exited {
            code: status.code(),
            stdout,
            stderr,
        },
        None => Ran::TimedOut,
    }
    // ANCHOR_END: exercise-s19-wait
}

/// Reads a pipe to its end on a thread of its own.
fn reader(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// SIGKILL to the group `id` leads, through the `kill` command (no
/// `unsafe`, so no `libc::killpg`), as the shared `bash` tool does.
fn kill_group(id: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{id}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_output_and_exit_code_come_through() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            "read line; echo \"got $line\"; echo oops >&2; exit 3",
            "hello\n",
            dir.path(),
            Duration::from_secs(10),
        );
        assert_eq!(
            ran,
            Ran::Exited {
                code: Some(3),
                stdout: "got hello\n".into(),
                stderr: "oops\n".into()
            }
        );
    }

    #[test]
    fn a_hook_past_its_timeout_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        // The shell waits on a child that holds the pipes: both must go.
        let ran = run(
            "sleep 30; echo late",
            "",
            dir.path(),
            Duration::from_millis(200),
        );
        assert_eq!(ran, Ran::TimedOut);
    }
}
