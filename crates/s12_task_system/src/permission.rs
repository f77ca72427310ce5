//! The permission gate: three checks before any tool runs.
//!
//! 1. **Deny list.** A `bash` command containing one of [`DENY_LIST`] is
//!    refused outright. Nobody is asked, and no flag overrides it.
//! 2. **Ask rules.** A call that matches one of the rules in [`check_rules`]
//!    (a file path outside the workspace, a `bash` command containing one of
//!    [`ASK_PATTERNS`]) needs the user's approval.
//! 3. **The user's answer.** An [`Approver`] decides: the terminal asks
//!    `Allow? [y/N]`, `--yes` approves in advance, tests script the answers.
//!
//! A call that matches neither list runs without a question; that is most
//! calls. A refusal is not an error of the harness: it becomes an `is_error`
//! tool result that tells the model why, and the loop goes on.
//!
//! Both lists match substrings of the command as written. That places the
//! gate in the loop and catches honest mistakes; it does not stop anyone who
//! wants to get past it (the chapter shows how). Treat it as a seat belt,
//! not a wall.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use shared::cli::{TerminalAnswer, ask_yes_no, describe_input, show_answered};
use shared::protocol::ToolUse;
use shared::sync::LockExt;
use shared::tools::Workspace;

// ANCHOR: lists
/// Text that must never appear in a `bash` command.
pub const DENY_LIST: &[&str] = &[
    "rm -rf /",
    "sudo",
    "shutdown",
    "reboot",
    "mkfs",
    "dd if=",
    "> /dev/sda",
];

/// Text that makes a `bash` command ask first.
pub const ASK_PATTERNS: &[&str] = &["rm ", "> /etc/", "chmod 777"];

/// The tools whose `path` input names a file.
pub const FILE_TOOLS: &[&str] = &["read_file", "write_file", "edit_file"];
// ANCHOR_END: lists

/// What the gate decided about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Do not run it; the text is the tool result the model reads.
    Deny(String),
}

/// A call that needs the user's approval, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// Which rule matched, e.g. `"Potentially destructive command"`.
    pub reason: String,
    /// The call itself.
    pub call: ToolUse,
}

impl ApprovalRequest {
    /// A one-line summary of the call, as the terminal shows it:
    /// `bash(rm test.txt)`.
    pub fn summary(&self) -> String {
        format!("{}({})", self.call.name, describe_input(&self.call))
    }
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    /// Nobody could be asked (standard input is not a terminal). The gate
    /// treats this as no, with a message saying how to approve in advance.
    NoTerminal,
}

// ANCHOR: approver
/// Gate 3: whoever answers `Allow? [y/N]`.
pub trait Approver: Send {
    fn approve(&mut self, request: &ApprovalRequest) -> Answer;
}
// ANCHOR_END: approver

// ANCHOR: gate
/// The three gates, in order, in front of every tool call.
pub struct PermissionGate {
    workspace: Workspace,
    /// Locked only while a question waits for its answer: questions come
    /// one at a time, and a call no rule asks about never waits for one.
    approver: Mutex<Box<dyn Approver>>,
}

impl PermissionGate {
    /// A gate for tools working in `workspace`, asking `approver`.
    pub fn new(workspace: Workspace, approver: Box<dyn Approver>) -> Self {
        Self {
            workspace,
            approver: Mutex::new(approver),
        }
    }

    /// Decides whether `call` may run.
    pub fn check(&self, call: &ToolUse) -> Decision {
        // Gate 1: the deny list wins over everything, including --yes.
        if call.name == "bash"
            && let Some(pattern) = check_deny_list(command_of(call))
        {
            return Decision::Deny(format!(
                "Permission denied: '{pattern}' is on the deny list, so this command was not run."
            ));
        }
        // Gate 2: does a rule say to ask?
        let Some(reason) = check_rules(&self.workspace, call) else {
            return Decision::Allow;
        };
        // Gate 3: ask.
        let request = ApprovalRequest {
            reason: reason.to_string(),
            call: call.clone(),
        };
        let answer = self.approver.locked().approve(&request);
        match answer {
            Answer::Yes => Decision::Allow,
            Answer::No => Decision::Deny(format!(
                "Permission denied by the user ({reason}). The call was not run."
            )),
            Answer::NoTerminal => Decision::Deny(format!(
                "Permission denied: {reason} needs the user's approval, but there is no \
                 terminal to ask, so the call was not run. The user can rerun with --yes \
                 to pre-approve such calls."
            )),
        }
    }
}
// ANCHOR_END: gate

// ANCHOR: checks
/// Gate 1: the deny-list entry `command` contains, if any.
pub fn check_deny_list(command: &str) -> Option<&'static str> {
    // ANCHOR: exercise-s03-deny
    DENY_LIST
        .iter()
        .copied()
        .find(|pattern| command.contains(pattern))
    // ANCHOR_END: exercise-s03-deny
}

/// Gate 2: why `call` needs approval, if it does.
pub fn check_rules(workspace: &Workspace, call: &ToolUse) -> Option<&'static str> {
    if FILE_TOOLS.contains(&call.name.as_str()) && leaves_workspace(workspace, call) {
        return Some("Access outside workspace");
    }
    if call.name == "bash" && ASK_PATTERNS.iter().any(|p| command_of(call).contains(p)) {
        return Some("Potentially destructive command");
    }
    None
}

/// Whether the call's `path` resolves outside the workspace. This is the
/// very check the file tools make (symlinks included), so the rule asks
/// about exactly the paths the tools would refuse.
fn leaves_workspace(workspace: &Workspace, call: &ToolUse) -> bool {
    // ANCHOR: exercise-s03-outside
    let Some(path) = call.input.get("path").and_then(|path| path.as_str()) else {
        return false;
    };
    matches!(
        workspace.resolve(path),
        Err(shared::tools::PathError::Escapes { .. })
    )
    // ANCHOR_END: exercise-s03-outside
}

/// The `command` of a `bash` call; empty when it is missing, so a bad call
/// passes the gate and the tool itself reports what was wrong.
fn command_of(call: &ToolUse) -> &str {
    call.input
        .get("command")
        .and_then(|command| command.as_str())
        .unwrap_or_default()
}
// ANCHOR_END: checks

// ANCHOR: terminal
/// Asks on the terminal (through the front end's [`ask_yes_no`]): the
/// request goes to standard error, and `y` or `yes` is yes, anything else
/// no. When standard input is not a terminal — a pipe, a file, a CI job —
/// nothing is read: the input is not meant as answers, so the safe answer
/// is no.
#[derive(Debug, Default, Clone, Copy)]
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn approve(&mut self, request: &ApprovalRequest) -> Answer {
        match ask_yes_no(
            &question(request),
            ALLOW_PROMPT,
            "no terminal to ask; rerun with --yes to pre-approve",
        ) {
            TerminalAnswer::Yes => Answer::Yes,
            TerminalAnswer::No => Answer::No,
            TerminalAnswer::NoTerminal => Answer::NoTerminal,
        }
    }
}
// ANCHOR_END: terminal

/// Approves every request (`--yes`), saying so on the terminal.
#[derive(Debug, Default, Clone, Copy)]
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn approve(&mut self, request: &ApprovalRequest) -> Answer {
        show_answered(
            &question(request),
            ALLOW_PROMPT,
            "yes (pre-approved by --yes)",
        );
        Answer::Yes
    }
}

/// How the terminal asks.
const ALLOW_PROMPT: &str = "   Allow? [y/N]";

/// The request as the terminal shows it.
fn question(request: &ApprovalRequest) -> String {
    format!("⚠  {}\n   Tool: {}", request.reason, request.summary())
}

/// Answers from a list, in order, and records every request: for tests and
/// scripted runs. Once the list is used up, the answer is no. Clones share
/// the list and the record, so a test keeps one and gives one away.
#[derive(Debug, Clone, Default)]
pub struct ScriptedApprover {
    state: Arc<Mutex<Scripted>>,
}

#[derive(Debug, Default)]
struct Scripted {
    answers: VecDeque<bool>,
    asked: Vec<ApprovalRequest>,
}

impl ScriptedApprover {
    /// An approver answering `answers` (true = yes) in order.
    pub fn new(answers: impl IntoIterator<Item = bool>) -> Self {
        Self {
            state: Arc::new(Mutex::new(Scripted {
                answers: answers.into_iter().collect(),
                asked: Vec::new(),
            })),
        }
    }

    /// Every request received so far.
    pub fn asked(&self) -> Vec<ApprovalRequest> {
        self.lock().asked.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Scripted> {
        self.state.locked()
    }
}

impl Approver for ScriptedApprover {
    fn approve(&mut self, request: &ApprovalRequest) -> Answer {
        let mut state = self.lock();
        state.asked.push(request.clone());
        match state.answers.pop_front() {
            Some(true) => Answer::Yes,
            _ => Answer::No,
        }
    }
}
