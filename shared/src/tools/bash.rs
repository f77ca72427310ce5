//! The `bash` tool: run a shell command in the workspace.
//!
//! Running a command for a model is easy; stopping it is the hard part. A
//! command can start children of its own (`make` runs compilers, `cmd &`
//! leaves a process behind), print gigabytes, or never end. So:
//!
//! * The command gets its **own process group**. Killing the group kills the
//!   shell *and everything it started*, which killing the shell alone would
//!   not: its children would live on as orphans.
//! * A `ProcessGroup` guard kills the group when it is dropped. If the user
//!   cancels the turn, the loop drops our future, and the guard's `Drop`
//!   cleans up; no code path can forget.
//! * stdout and stderr are read **at the same time**. Reading one to the end
//!   before the other can deadlock: the child blocks writing to a full stderr
//!   pipe while we wait for stdout to end.
//! * Each stream keeps at most [`BashOptions::capture_limit_bytes`] and
//!   reads (and throws away) the rest, so the child never blocks on a full
//!   pipe and memory stays bounded however much it prints.
//! * A non-zero exit is information for the model, not a failure of the
//!   tool: the output says `[exit status N]` and `is_error` stays false. A
//!   timeout, or a shell that cannot start, is an error.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

use super::input::parse_input;
use super::{MAX_OUTPUT_CHARS, Workspace};
use crate::hooks::ToolOutput;
use crate::protocol::ToolSpec;
use crate::text::limit_output;

/// How long a command may run unless the model asks otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest timeout the model may ask for, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// How `bash` runs a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BashOptions {
    /// After this long the command and everything it started are killed.
    pub timeout: Duration,
    /// The longest text handed back to the model, in characters.
    pub max_output_chars: usize,
    /// The most bytes kept from each of stdout and stderr; the rest is read
    /// and discarded.
    pub capture_limit_bytes: usize,
}

impl Default for BashOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_output_chars: MAX_OUTPUT_CHARS,
            capture_limit_bytes: 1024 * 1024,
        }
    }
}

#[derive(Deserialize)]
struct Input {
    command: String,
    /// Seconds; capped at [`MAX_TIMEOUT_SECS`].
    #[serde(default)]
    timeout: Option<u64>,
}

/// What the model is told about `bash`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        "bash",
        format!(
            "Run a shell command with bash in the workspace directory and return its \
             stdout and stderr. Non-zero exit statuses are reported. stdin is closed, so \
             interactive commands will not wait for input. Commands are stopped after {} \
             seconds unless `timeout` says otherwise (at most {MAX_TIMEOUT_SECS}); processes \
             left running in the background are stopped when the command ends.",
            DEFAULT_TIMEOUT.as_secs()
        ),
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run."},
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_SECS,
                    "description": "Seconds before the command is stopped."
                }
            },
            "required": ["command"]
        }),
    )
}

/// Runs the model's `bash` call.
pub async fn call(workspace: &Workspace, input: &Value) -> ToolOutput {
    let input: Input = match parse_input("bash", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    let mut options = BashOptions::default();
    if let Some(seconds) = input.timeout {
        options.timeout = Duration::from_secs(seconds.clamp(1, MAX_TIMEOUT_SECS));
    }
    run(workspace, &input.command, &options).await
}

/// How a command ended, for callers that act on it (lesson 13 reports it
/// in a background task's notification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandStatus {
    /// Exit status 0.
    Succeeded,
    /// A non-zero exit status, or killed by a signal.
    Failed,
    /// Stopped at the timeout, with everything it started.
    TimedOut,
    /// The shell could not be started, or the command was lost track of.
    NotRun,
}

/// What a command printed (as the model sees it) and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReport {
    /// Standard output and error, truncated and labelled, as the model sees them.
    pub text: String,
    /// How the command ended.
    pub status: CommandStatus,
}

impl CommandReport {
    /// The tool result: a timeout or a shell that could not start is an
    /// error; a non-zero exit is information, not an error.
    pub fn into_output(self) -> ToolOutput {
        match self.status {
            CommandStatus::Succeeded | CommandStatus::Failed => ToolOutput::ok(self.text),
            CommandStatus::TimedOut | CommandStatus::NotRun => ToolOutput::error(self.text),
        }
    }
}

/// Runs `command` with `bash -c` in the workspace root and reports what it
/// printed and how it ended.
///
/// Dropping the returned future before it completes kills the command and
/// everything it started.
pub async fn run(workspace: &Workspace, command: &str, options: &BashOptions) -> ToolOutput {
    execute(workspace, command, options).await.into_output()
}

/// [`run`], reporting how the command ended as well as what it printed.
pub async fn execute(workspace: &Workspace, command: &str, options: &BashOptions) -> CommandReport {
    let not_run = |text: String| CommandReport {
        text,
        status: CommandStatus::NotRun,
    };
    let mut child = match spawn(workspace.root(), command) {
        Ok(child) => child,
        Err(error) => return not_run(format!("Could not start the shell: {error}")),
    };
    // Declared after `child`, so on an early drop it runs first: the whole
    // group dies, then tokio's `kill_on_drop` finishes off the shell.
    let mut group = ProcessGroup::of(&child);
    let mut stdout = Capture::new(options.capture_limit_bytes);
    let mut stderr = Capture::new(options.capture_limit_bytes);
    let (stdout_pipe, stderr_pipe) = (child.stdout.take(), child.stderr.take());

    let finished = tokio::time::timeout(options.timeout, async {
        let (status, (), ()) = tokio::join!(
            async {
                let status = child.wait().await;
                // The shell is done. Anything it left running in its group
                // still holds our pipes open, and the reads below would
                // wait for it until the timeout: stop it, so they end now.
                // (A process that left the group with `setsid` is out of
                // reach; then the timeout is what ends the wait.)
                group.kill();
                status
            },
            stdout.fill(stdout_pipe),
            stderr.fill(stderr_pipe),
        );
        status
    })
    .await;

    match finished {
        Ok(Ok(status)) => CommandReport {
            text: report(&stdout, &stderr, Ending::Exited(status), options),
            status: if status.success() {
                CommandStatus::Succeeded
            } else {
                CommandStatus::Failed
            },
        },
        Ok(Err(error)) => not_run(format!("Lost track of the command: {error}")),
        Err(_elapsed) => {
            group.kill();
            CommandReport {
                text: report(&stdout, &stderr, Ending::TimedOut, options),
                status: CommandStatus::TimedOut,
            }
        }
    }
}

/// Starts `bash -c command` (or `sh -c` where there is no bash) in `root`,
/// as the leader of a new process group.
fn spawn(root: &Path, command: &str) -> std::io::Result<Child> {
    match shell("bash", root, command).spawn() {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            shell("sh", root, command).spawn()
        }
        result => result,
    }
}

fn shell(program: &str, root: &Path, command: &str) -> Command {
    let mut shell = Command::new(program);
    shell
        .arg("-c")
        .arg(command)
        .current_dir(root)
        // No stdin: a command that asks a question gets end-of-file instead
        // of hanging until the timeout.
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // 0 = a new group whose id is the shell's own pid.
        .process_group(0)
        .kill_on_drop(true);
    shell
}

/// The process group of a running command. Dropping the guard kills the
/// whole group, unless [`ProcessGroup::kill`] already did.
struct ProcessGroup {
    id: Option<u32>,
}

impl ProcessGroup {
    /// The group `child` leads (it was spawned with `process_group(0)`).
    fn of(child: &Child) -> Self {
        Self { id: child.id() }
    }

    /// Kills every process in the group, once. Later calls do nothing: once
    /// the group is gone its id may be reused by an unrelated process.
    fn kill(&mut self) {
        if let Some(id) = self.id.take() {
            kill_group(id);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends SIGKILL to process group `id`. Without `unsafe` (and so without
/// `libc::killpg`) we ask the `kill` command, which accepts a negative id
/// for a group. This blocks for the millisecond `kill` takes, which is also
/// what lets it run inside `Drop`.
fn kill_group(id: u32) {
    let group = format!("-{id}");
    let quiet = |command: &mut std::process::Command| {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
    };
    let sent = quiet(std::process::Command::new("kill").args(["-KILL", "--", &group]));
    if sent.is_err() {
        // No `kill` binary: every shell has `kill` built in.
        let _ = quiet(
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("kill -9 {group}")),
        );
    }
}

/// One output stream, kept up to a limit and counted beyond it.
struct Capture {
    kept: Vec<u8>,
    total: u64,
    limit: usize,
}

impl Capture {
    fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            total: 0,
            limit,
        }
    }

    /// Reads `pipe` to its end. Bytes past the limit are counted and
    /// dropped, but still read, so the writer never blocks on a full pipe.
    async fn fill(&mut self, pipe: Option<impl AsyncRead + Unpin>) {
        let Some(mut pipe) = pipe else {
            return;
        };
        let mut buffer = vec![0; 64 * 1024];
        // A read error ends the stream like end-of-file: the output so far
        // is still worth showing.
        while let Ok(read) = pipe.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            self.keep(&buffer[..read]);
        }
    }

    fn keep(&mut self, chunk: &[u8]) {
        let room = self.limit.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        self.total += chunk.len() as u64;
    }

    fn discarded(&self) -> u64 {
        self.total - self.kept.len() as u64
    }

    /// The kept bytes as text. Commands may print anything, so invalid
    /// UTF-8 becomes U+FFFD instead of an error.
    fn text(&self) -> String {
        let mut bytes = self.kept.as_slice();
        if self.discarded() > 0 {
            // The cut may have fallen inside a character; drop its first
            // bytes rather than show them as garbage.
            bytes = without_partial_last_char(bytes);
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// `bytes` minus a UTF-8 character cut off at the end, if there is one.
fn without_partial_last_char(bytes: &[u8]) -> &[u8] {
    // A character is at most 4 bytes, so its lead byte is among the last 3
    // if the character is incomplete.
    let tail_start = bytes.len().saturating_sub(3);
    for start in (tail_start..bytes.len()).rev() {
        let byte = bytes[start];
        let needed = match byte {
            0b1100_0000..=0b1101_1111 => 2,
            0b1110_0000..=0b1110_1111 => 3,
            0b1111_0000..=0b1111_0111 => 4,
            // A continuation byte: keep looking for the lead byte.
            0b1000_0000..=0b1011_1111 => continue,
            // ASCII or invalid: nothing is cut off.
            _ => return bytes,
        };
        return if bytes.len() - start < needed {
            &bytes[..start]
        } else {
            bytes
        };
    }
    bytes
}

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
}

/// The text the model sees: stdout, then stderr, then notes on anything
/// cut and on how the command ended.
fn report(stdout: &Capture, stderr: &Capture, ending: Ending, options: &BashOptions) -> String {
    let mut output = stdout.text();
    let errors = stderr.text();
    if !output.is_empty() && !errors.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(&errors);

    let mut notes = Vec::new();
    for (name, capture) in [("stdout", stdout), ("stderr", stderr)] {
        if capture.discarded() > 0 {
            notes.push(format!(
                "[{name} was {} bytes; only the first {} were kept]",
                capture.total,
                capture.kept.len()
            ));
        }
    }
    match ending {
        Ending::Exited(status) => notes.extend(describe_exit(status)),
        Ending::TimedOut => notes.push(format!(
            "[timed out after {}; the command and everything it started were killed]",
            seconds(options.timeout)
        )),
    }

    let mut text = if output.is_empty() {
        "(no output)".to_string()
    } else {
        limit_output(&output, options.max_output_chars)
    };
    for note in notes {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&note);
    }
    text
}

/// A note for a non-zero exit; nothing for success.
fn describe_exit(status: ExitStatus) -> Option<String> {
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("[exit status {code}]")),
        (None, Some(signal)) => Some(format!("[killed by signal {signal}]")),
        (None, None) => Some(format!("[ended abnormally: {status}]")),
    }
}

/// `120s`, or `1.5s` for fractions.
fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_characters_are_dropped_at_the_cut() {
        let text = "aé✓".as_bytes(); // 1 + 2 + 3 bytes
        assert_eq!(without_partial_last_char(text), text);
        assert_eq!(without_partial_last_char(&text[..5]), "aé".as_bytes());
        assert_eq!(without_partial_last_char(&text[..4]), "aé".as_bytes());
        assert_eq!(without_partial_last_char(&text[..2]), b"a");
        assert_eq!(without_partial_last_char(b"\xff"), b"\xff");
    }

    #[test]
    fn capture_counts_what_it_drops() {
        let mut capture = Capture::new(4);
        capture.keep(b"abc");
        capture.keep(b"defg");
        assert_eq!(capture.kept, b"abcd");
        assert_eq!(capture.total, 7);
        assert_eq!(capture.discarded(), 3);
    }

    #[test]
    fn timeouts_read_naturally() {
        assert_eq!(seconds(Duration::from_secs(120)), "120s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5s");
    }
}
