//! The slash commands: `/status` and `/help`, answered by the harness
//! without a model call.
//!
//! The front end offers every line that starts with `/` to
//! [`shared::hooks::Hooks::slash_command`] before any turn. This lesson
//! answers a command it knows with its text, and a line that is one word
//! with no further `/` (a mistyped `/stauts`) with the list of commands, so
//! a typo is not sent to the model (and paid for) as a prompt. Any other
//! line — `/tmp/build.log shows an error, why?` — is not a command: it
//! goes to the model like any prompt.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use shared::text::plural;

use crate::compact::CompactConfig;
use crate::recovery::RecoveryPolicy;
use crate::settings::Settings;
use crate::settings::command_hooks::HookEvent;
use crate::tasks::{Status as TaskStatus, Task};
use crate::team::{Autonomy, Member};
use crate::worktrees::{Worktree, WorktreeError};

/// Every command, with what it shows.
pub const COMMANDS: &[(&str, &str)] = &[
    ("/status", "what is configured and what is running"),
    ("/help", "these commands"),
];

/// The answer to `line`, a line that starts with `/`; `None` when the line
/// is not a command, so it goes to the model.
pub fn answer(line: &str, status: impl FnOnce() -> StatusView) -> Option<String> {
    let line = line.trim();
    match line.split_whitespace().next().unwrap_or_default() {
        "/status" => Some(render(&status())),
        "/help" => Some(help()),
        other if looks_like_a_command(line) => {
            Some(format!("Unknown command {other}.\n{}", help()))
        }
        _ => None,
    }
}

/// Whether a line no command claimed was still meant as one: a single
/// word, `/` and a name with no further `/`. A path (`/tmp/x.log`) or a
/// sentence is a prompt.
pub fn looks_like_a_command(line: &str) -> bool {
    line.strip_prefix('/').is_some_and(|name| {
        !name.is_empty() && !name.contains('/') && !name.contains(char::is_whitespace)
    })
}

/// `/help`.
pub fn help() -> String {
    let mut text = String::from("Commands (answered here, not sent to the model):");
    for (command, what) in COMMANDS {
        let _ = write!(text, "\n  {command:<8} {what}");
    }
    text
}

// ANCHOR: status_view
/// What `/status` shows, gathered from the running harness.
#[derive(Debug, Clone)]
pub struct StatusView {
    pub lesson: &'static str,
    pub model_id: String,
    pub provider: String,
    pub settings: Settings,
    /// The skills directory in use and how many skills it holds.
    pub skills: Option<(std::path::PathBuf, usize)>,
    pub compact: CompactConfig,
    pub recovery: RecoveryPolicy,
    pub autonomy: Autonomy,
    pub teammates: Vec<Member>,
    /// Id and command of each background command still running.
    pub background: Vec<(String, String)>,
    /// Id and workflow of each workflow run still going (lesson 20).
    pub workflows: Vec<(String, String)>,
    /// The saved scripts (`.workflows/*.js`) read at start-up.
    pub saved_scripts: Vec<String>,
    pub cron_jobs: usize,
    pub tasks: Vec<Task>,
    /// `Err`: the worktrees could not be listed (no git repository, say).
    /// Shared, so that the view stays `Clone`.
    pub worktrees: Result<Vec<Worktree>, Arc<WorktreeError>>,
    /// Lesson 18's account of the MCP servers: each configured one, and
    /// whether it is connected.
    pub mcp: String,
}
// ANCHOR_END: status_view

/// `/status`: what the agent runs under, then what it has going now.
pub fn render(view: &StatusView) -> String {
    let mut out = String::new();
    configuration(view, &mut out);
    thresholds(view, &mut out);
    activity(view, &mut out);
    out.trim_end().to_string()
}

/// What the agent runs under: the model, and what the settings file
/// configured (rules, command hooks, MCP servers).
fn configuration(view: &StatusView, out: &mut String) {
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("{} status", view.lesson));
    line(format!(
        "model:       {} ({}), fallback {}",
        view.model_id,
        view.provider,
        view.recovery.fallback_model.as_deref().unwrap_or("none")
    ));
    line(format!(
        "settings:    {}",
        view.settings.path.as_deref().map_or_else(
            || "no settings file; the built-in defaults".to_string(),
            |path| path.display().to_string()
        )
    ));
    let rules = &view.settings.permissions;
    line(format!(
        "permissions: {} deny, {} ask, {} allow (then the lesson's own gate)",
        rules.deny.len(),
        rules.ask.len(),
        rules.allow.len()
    ));
    for (verdict, list) in [
        ("deny", &rules.deny),
        ("ask", &rules.ask),
        ("allow", &rules.allow),
    ] {
        for rule in list {
            line(format!("  {verdict:<5} {rule}"));
        }
    }
    line(format!(
        "hooks:       {}",
        plural(view.settings.hooks.len(), "command hook", "command hooks")
    ));
    for event in HookEvent::ALL {
        for hook in view
            .settings
            .hooks
            .iter()
            .filter(|hook| hook.event == event)
        {
            line(format!(
                "  {:<16} {:<12} {} (timeout {} s)",
                event.name(),
                match (&hook.matcher, event.has_tool()) {
                    (Some(matcher), _) => matcher.as_str(),
                    (None, true) => "*",
                    (None, false) => "",
                },
                hook.command,
                hook.timeout.as_secs()
            ));
        }
    }
    line("MCP servers: (the settings file's and .mcp.json's)".to_string());
    for status in view.mcp.lines() {
        line(format!("  {status}"));
    }
}

/// The skills found, and the thresholds of compaction and recovery.
fn thresholds(view: &StatusView, out: &mut String) {
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!(
        "skills:      {}",
        view.skills.as_ref().map_or_else(
            || "none".to_string(),
            |(dir, count)| format!("{} in {}", plural(*count, "skill", "skills"), show(dir))
        )
    ));
    let c = &view.compact;
    line(format!(
        "compaction:  results over {} chars saved; snip at {} messages to {}; micro keeps {} results, \
         batch {} chars; summary above {} tokens",
        c.tool_result_budget_chars,
        c.max_messages,
        c.snip_to_messages,
        c.keep_recent_tool_results,
        c.micro_batch_chars,
        c.threshold_tokens
    ));
    let r = &view.recovery;
    line(format!(
        "recovery:    {} attempts, backoff {} ms to {} ms, fallback after {} overloads, {} continuations",
        r.max_attempts,
        r.base_delay.as_millis(),
        r.max_delay.as_millis(),
        r.overloads_before_fallback,
        r.max_continuations
    ));
}

/// What the agent has going now, from its teammates to its worktrees.
fn activity(view: &StatusView, out: &mut String) {
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    let a = &view.autonomy;
    line(format!(
        "teammates:   {} (idle scans every {} ms up to {} ms, leases {} s)",
        if view.teammates.is_empty() {
            "none".to_string()
        } else {
            view.teammates
                .iter()
                .map(|member| format!("{} ({})", member.name, member.status))
                .collect::<Vec<_>>()
                .join(", ")
        },
        a.scan_first.as_millis(),
        a.scan_max.as_millis(),
        a.lease.as_secs()
    ));
    line(format!(
        "background:  {} running{}",
        view.background.len(),
        view.background
            .iter()
            .map(|(id, command)| format!("\n  {id} {command}"))
            .collect::<String>()
    ));
    line(format!(
        "workflows:   {} running{}",
        view.workflows.len(),
        view.workflows
            .iter()
            .map(|(id, workflow)| format!("\n  {id} {workflow}"))
            .collect::<String>()
    ));
    line(format!(
        "scripts:     {}",
        if view.saved_scripts.is_empty() {
            "none saved in .workflows/".to_string()
        } else {
            view.saved_scripts.join(", ")
        }
    ));
    line(format!(
        "cron:        {}",
        plural(view.cron_jobs, "job", "jobs")
    ));
    let count = |status: TaskStatus| {
        view.tasks
            .iter()
            .filter(|task| task.status == status)
            .count()
    };
    line(format!(
        "task board:  {} pending, {} in progress, {} completed",
        count(TaskStatus::Pending),
        count(TaskStatus::InProgress),
        count(TaskStatus::Completed)
    ));
    line(format!(
        "worktrees:   {}",
        match &view.worktrees {
            Ok(list) if list.is_empty() => "none".to_string(),
            Ok(list) => list
                .iter()
                .map(|worktree| worktree.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            Err(why) => format!("unavailable ({why})"),
        }
    ));
}

fn show(path: &Path) -> String {
    path.display().to_string()
}
