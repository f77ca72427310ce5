//! Hooks written as shell commands in the settings file, registered on
//! lesson 4's [`HookRegistry`] next to the built-in ones.
//!
//! ```toml
//! [[hooks.PreToolUse]]
//! matcher = "bash"                 # tool names; `|` between alternatives, `*` wildcards
//! command = "./scripts/check.sh"
//! timeout_secs = 10
//! ```
//!
//! The command runs with `sh -c` in the workspace and reads one JSON object
//! on its standard input, shaped like Claude Code's:
//! `{"hook_event_name", "session_id", "cwd", …}` plus `tool_name` and
//! `tool_input` (tool events), `tool_response` (`PostToolUse`) or `prompt`
//! (`UserPromptSubmit`). It answers with its exit code:
//!
//! | exit | meaning |
//! |------|---------|
//! | 0    | go on. Standard output may be a JSON decision: `{"decision": "block", "reason": "…"}`, or `hookSpecificOutput.permissionDecision = "deny"`. Other text on standard output, for `UserPromptSubmit`, is added to the prompt as context |
//! | 2    | block, with standard error as the reason: the tool call is refused and the model reads why; the prompt is not sent; at `PostToolUse` (the call has run) the model reads the reason added to that call's result; at `Stop` the model is sent back to work with the reason as its prompt |
//! | else | the hook failed; a notice says so and the agent goes on as if it had passed |
//!
//! A hook still running at its timeout is killed (with everything it
//! started) and counts as failed. `PostToolUse` hooks run after the tool,
//! so they cannot undo it: a block there (exit 2, or a block decision) is
//! feedback, added to the call's result for the model to read, as Claude
//! Code does, and shown as a notice.
//!
//! Subagents and teammates run the same registry, so these hooks see their
//! calls too.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use shared::hooks::{PromptCheck, ToolOutput};
use shared::notice::Notices;
use shared::protocol::{ContentBlock, Message, Role, ToolUse};
use shared::text::truncate_chars;

use super::rules::{ToolPattern, ToolPatternError};
use super::run::{Ran, run};
use crate::builtin_hooks::HOOK_TAG;
use crate::hook_registry::HookRegistry;

/// The four events a command can hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookEvent {
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
}

impl HookEvent {
    /// Every event, in the order of a round.
    pub const ALL: [Self; 4] = [
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::Stop,
    ];

    /// The name in the settings file and in the JSON input.
    pub fn name(self) -> &'static str {
        match self {
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::Stop => "Stop",
        }
    }

    /// Whether the event is about one tool call, so a matcher applies.
    pub fn has_tool(self) -> bool {
        matches!(self, Self::PreToolUse | Self::PostToolUse)
    }
}

/// How long a hook may run when the settings file does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest timeout the settings file may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// One `[[hooks.<Event>]]` entry of the settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandHook {
    pub event: HookEvent,
    /// The matcher as written; `None` matches every tool.
    pub matcher: Option<String>,
    tools: Vec<ToolPattern>,
    pub command: String,
    pub timeout: Duration,
}

impl CommandHook {
    /// A hook for `event`; `matcher` is `|`-separated tool patterns
    /// (`bash|write_file`, `mcp__docs__*`, `*`). The error says what is
    /// wrong with the matcher.
    pub fn new(
        event: HookEvent,
        matcher: Option<&str>,
        command: &str,
        timeout: Duration,
    ) -> Result<Self, ToolPatternError> {
        let tools = match matcher {
            None => Vec::new(),
            Some(matcher) => matcher
                .split('|')
                .map(ToolPattern::parse)
                .collect::<Result<Vec<_>, _>>()?,
        };
        Ok(Self {
            event,
            matcher: matcher.map(str::to_string),
            tools,
            command: command.to_string(),
            timeout,
        })
    }

    /// Whether the hook is for calls of `tool`.
    pub fn applies_to(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|pattern| pattern.matches(tool))
    }
}

/// What every hook's input shares: where it runs and which session it is.
#[derive(Debug, Clone)]
pub struct HookEnv {
    pub cwd: PathBuf,
    pub session_id: String,
    pub notices: Notices,
}

// ANCHOR: register
/// Adds `hooks` to `registry`, each on its event, in the file's order.
pub fn register(registry: &mut HookRegistry, hooks: &[CommandHook], env: &HookEnv) {
    for hook in hooks {
        let (hook, env) = (hook.clone(), env.clone());
        match hook.event {
            HookEvent::UserPromptSubmit => registry.on_user_prompt_submit(move |prompt| {
                let input = env.input(hook.event, json!({ "prompt": prompt }));
                match env.ask(&hook, &input) {
                    Answer::Block(reason) => Some(PromptCheck::Block(reason)),
                    Answer::Pass(Some(context)) => {
                        Some(PromptCheck::Replace(format!("{prompt}\n\n{context}")))
                    }
                    Answer::Pass(None) => None,
                }
            }),
            HookEvent::PreToolUse => registry.on_pre_tool_use(move |call| {
                if !hook.applies_to(&call.name) {
                    return None;
                }
                let input = env.input(hook.event, tool_fields(call));
                match env.ask(&hook, &input) {
                    Answer::Block(reason) => Some(format!(
                        "Blocked by a PreToolUse hook ({}): {reason}",
                        hook.command
                    )),
                    Answer::Pass(_) => None,
                }
            }),
            HookEvent::PostToolUse => registry.on_post_tool_use_feedback(move |call, output| {
                if !hook.applies_to(&call.name) {
                    return None;
                }
                let mut fields = tool_fields(call);
                fields["tool_response"] = tool_response(output);
                let input = env.input(hook.event, fields);
                match env.ask(&hook, &input) {
                    // The call has run: the objection is feedback for the
                    // model, in that call's result.
                    Answer::Block(reason) => {
                        env.notices.emit(
                            HOOK_TAG,
                            format!(
                                "PostToolUse hook ({}) objected to {} after it ran: {reason}",
                                hook.command, call.name
                            ),
                        );
                        Some(format!("{}: {reason}", hook.command))
                    }
                    Answer::Pass(_) => None,
                }
            }),
            HookEvent::Stop => registry.on_stop(move |history: &[Message]| {
                let input = env.input(
                    hook.event,
                    json!({ "last_assistant_message": last_assistant_text(history) }),
                );
                match env.ask(&hook, &input) {
                    Answer::Block(reason) => Some(reason),
                    Answer::Pass(_) => None,
                }
            }),
        }
    }
}
// ANCHOR_END: register

fn tool_fields(call: &ToolUse) -> Value {
    json!({ "tool_name": call.name, "tool_input": call.input, "tool_use_id": call.id })
}

fn tool_response(output: &ToolOutput) -> Value {
    json!({ "output": output.text, "is_error": output.is_error })
}

/// What a hook said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// Go on, with context to add (only `UserPromptSubmit` uses it).
    Pass(Option<String>),
    /// Stop this, for this reason.
    Block(String),
}

impl HookEnv {
    /// The JSON a hook of `event` reads: the common fields, then `fields`.
    fn input(&self, event: HookEvent, fields: Value) -> Value {
        let mut input = json!({
            "hook_event_name": event.name(),
            "session_id": self.session_id,
            "cwd": self.cwd.display().to_string(),
        });
        if let (Some(input), Value::Object(fields)) = (input.as_object_mut(), fields) {
            input.extend(fields);
        }
        input
    }

    // ANCHOR: ask
    /// Runs `hook` on `input` and reads its answer (see the module's table).
    fn ask(&self, hook: &CommandHook, input: &Value) -> Answer {
        let event = hook.event.name();
        let failed = |why: String| {
            self.notices.emit(
                HOOK_TAG,
                format!("{event} hook ({}) {why}; going on", hook.command),
            );
            Answer::Pass(None)
        };
        match run(&hook.command, &input.to_string(), &self.cwd, hook.timeout) {
            Ran::Exited {
                code: Some(0),
                stdout,
                ..
            } => decision(&stdout),
            Ran::Exited {
                code: Some(2),
                stderr,
                ..
            } => {
                let reason = stderr.trim();
                let reason = if reason.is_empty() {
                    "it exited with 2 and gave no reason".to_string()
                } else {
                    reason.to_string()
                };
                self.notices.emit(
                    HOOK_TAG,
                    format!(
                        "{event} hook ({}) blocked: {}",
                        hook.command,
                        first_line(&reason)
                    ),
                );
                Answer::Block(reason)
            }
            Ran::Exited { code, stderr, .. } => failed(format!(
                "failed ({}){}",
                code.map_or("killed by a signal".into(), |code| format!("exit {code}")),
                match first_line(&stderr) {
                    line if line.is_empty() => String::new(),
                    line => format!(": {line}"),
                }
            )),
            Ran::TimedOut => failed(format!(
                "was still running after {} s and was stopped",
                hook.timeout.as_secs_f64()
            )),
            Ran::NotStarted(error) => failed(format!("could not start: {error}")),
        }
    }
    // ANCHOR_END: ask
}

/// Exit 0: standard output as a JSON decision, or as context.
fn decision(stdout: &str) -> Answer {
    let stdout = stdout.trim();
    let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(stdout) else {
        return Answer::Pass((!stdout.is_empty()).then(|| stdout.to_string()));
    };
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    let specific = answer.get("hookSpecificOutput");
    let reason = text(answer.get("reason"))
        .or_else(|| text(specific.and_then(|s| s.get("permissionDecisionReason"))))
        .unwrap_or_else(|| "the hook gave no reason".to_string());
    let blocked = text(answer.get("decision")).as_deref() == Some("block")
        || text(specific.and_then(|s| s.get("permissionDecision"))).as_deref() == Some("deny");
    if blocked {
        Answer::Block(reason)
    } else {
        Answer::Pass(text(specific.and_then(|s| s.get("additionalContext"))))
    }
}

fn first_line(text: &str) -> String {
    truncate_chars(text.trim().lines().next().unwrap_or_default(), 200)
}

/// The text of the model's last message: what a `Stop` hook judges.
fn last_assistant_text(history: &[Message]) -> String {
    history
        .iter()
        .rev()
        .find(|message| message.role == Role::Assistant)
        .map(|message| {
            message
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_on_standard_output_is_a_decision() {
        assert_eq!(
            decision(r#"{"decision": "block", "reason": "no"}"#),
            Answer::Block("no".into())
        );
        assert_eq!(
            decision(
                r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "not here"}}"#
            ),
            Answer::Block("not here".into())
        );
        assert_eq!(
            decision(r#"{"hookSpecificOutput": {"additionalContext": "it is Tuesday"}}"#),
            Answer::Pass(Some("it is Tuesday".into()))
        );
        assert_eq!(
            decision("  plain text \n"),
            Answer::Pass(Some("plain text".into()))
        );
        assert_eq!(decision(""), Answer::Pass(None));
    }

    #[test]
    fn matchers_name_tools_with_alternatives_and_wildcards() {
        let hook = CommandHook::new(
            HookEvent::PreToolUse,
            Some("Bash|write_file|mcp__docs__*"),
            "true",
            DEFAULT_TIMEOUT,
        )
        .unwrap();
        assert!(hook.applies_to("bash"));
        assert!(hook.applies_to("write_file"));
        assert!(hook.applies_to("mcp__docs__search"));
        assert!(!hook.applies_to("read_file"));
        let every = CommandHook::new(HookEvent::PreToolUse, None, "true", DEFAULT_TIMEOUT).unwrap();
        assert!(every.applies_to("anything"));
        assert!(
            CommandHook::new(HookEvent::PreToolUse, Some("a||b"), "true", DEFAULT_TIMEOUT).is_err()
        );
    }
}
