//! The settings file: one TOML file that configures every mechanism of the
//! earlier lessons, so the integrated agent is configured, not recompiled.
//!
//! ```text
//! --settings FILE, else <workspace>/.agent/settings.toml if it exists, else none
//!        │
//!        ▼  read once, by main, before anything starts
//!  [model]        id, provider, fallback       → the front end, lesson 11
//!  [permissions]  allow / ask / deny rules     → lesson 3's gate        (rules)
//!  [[hooks.*]]    shell commands on 4 events   → lesson 4's registry    (command_hooks)
//!  [mcp_servers]  servers in .mcp.json's shape → lesson 18's McpHub     (mcp)
//!  [skills]       dir                          → lesson 7
//!  [compaction]   thresholds                   → lesson 8's CompactConfig
//!  [recovery]     retry knobs                  → lesson 11's RecoveryPolicy
//!  [teams]        scan timings, lease          → lesson 16's Autonomy   (layers)
//!  [workflow]     concurrency                  → lesson 20's runtime    (layers)
//! ```
//!
//! Every section is optional, and no file at all means the defaults every
//! earlier lesson uses. Every key is checked: a misspelt one, a rule that
//! does not parse, a number out of range is refused at start with the
//! file, the key and the reason, and nothing runs. The file is not watched:
//! a change counts from the next start.
//!
//! Start reading at [`Settings::parse`], then [`rules`] for the permission
//! rules, [`command_hooks`] for the hooks, [`layers`] for the precedence.

pub mod command_hooks;
pub mod layers;
pub mod mcp;
pub mod pattern;
pub mod rules;
pub mod run;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use shared::model::config::ProviderKind;

pub use command_hooks::{CommandHook, HookEvent};
pub use layers::{CompactionSettings, RecoverySettings, TeamSettings, WorkflowSettings};
pub use mcp::ServerConfig;
pub use rules::{PermissionRules, Rule, Verdict};

/// Where the settings file is looked for when `--settings` names none,
/// relative to the workspace.
pub const DEFAULT_PATH: &str = ".agent/settings.toml";

// ANCHOR: settings
/// Everything the settings file said, checked.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The file they came from; `None`: there was none, these are the
    /// defaults.
    pub path: Option<PathBuf>,
    pub model: ModelSettings,
    pub permissions: PermissionRules,
    /// Grouped by event, each event's in the file's order.
    pub hooks: Vec<CommandHook>,
    pub mcp_servers: BTreeMap<String, ServerConfig>,
    /// As written; [`Settings::find`] takes a relative one from the
    /// workspace.
    pub skills_dir: Option<PathBuf>,
    pub compaction: CompactionSettings,
    pub recovery: RecoverySettings,
    pub teams: TeamSettings,
    pub workflow: WorkflowSettings,
}

/// `[model]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSettings {
    pub id: Option<String>,
    pub provider: Option<ProviderKind>,
    pub fallback: Option<String>,
}
// ANCHOR_END: settings

/// Why the settings cannot be used. The message always starts with the
/// file.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{}: cannot read it: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    /// Not TOML, or a key the file may not have; the message is the TOML
    /// parser's, with the line and column.
    #[error("{}: {message}", file.display())]
    Parse { file: PathBuf, message: String },
    #[error("{}: {key}: {reason}", file.display())]
    Invalid {
        file: PathBuf,
        key: String,
        reason: String,
    },
}

// ANCHOR: schema
/// The file as TOML has it. Every table refuses keys it does not know, so
/// a misspelling is an error, not a setting silently ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    model: ModelSection,
    #[serde(default)]
    permissions: PermissionsSection,
    #[serde(default)]
    hooks: HooksSection,
    #[serde(default)]
    mcp_servers: BTreeMap<String, ServerConfig>,
    #[serde(default)]
    skills: SkillsSection,
    #[serde(default)]
    compaction: CompactionSettings,
    #[serde(default)]
    recovery: RecoverySettings,
    #[serde(default)]
    teams: TeamSettings,
    #[serde(default)]
    workflow: WorkflowSettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelSection {
    id: Option<String>,
    provider: Option<String>,
    fallback: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionsSection {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HooksSection {
    #[serde(rename = "UserPromptSubmit", default)]
    user_prompt_submit: Vec<HookEntry>,
    #[serde(rename = "PreToolUse", default)]
    pre_tool_use: Vec<HookEntry>,
    #[serde(rename = "PostToolUse", default)]
    post_tool_use: Vec<HookEntry>,
    #[serde(rename = "Stop", default)]
    stop: Vec<HookEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookEntry {
    matcher: Option<String>,
    command: String,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillsSection {
    dir: Option<PathBuf>,
}
// ANCHOR_END: schema

impl Settings {
    /// The settings `--settings` names (which must exist), else those at
    /// [`DEFAULT_PATH`] in `workspace` if that file exists, else the
    /// defaults.
    /// A relative `skills.dir` is taken from `workspace`.
    pub fn find(named: Option<&Path>, workspace: &Path) -> Result<Self, SettingsError> {
        let default = workspace.join(DEFAULT_PATH);
        let mut settings = match named {
            Some(file) => Self::load(file)?,
            None if default.is_file() => Self::load(&default)?,
            None => return Ok(Self::default()),
        };
        settings.skills_dir = settings.skills_dir.map(|dir| workspace.join(dir));
        Ok(settings)
    }

    /// Reads and checks `file`.
    pub fn load(file: &Path) -> Result<Self, SettingsError> {
        let text = std::fs::read_to_string(file).map_err(|source| SettingsError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        Self::parse(&text, file)
    }

    // ANCHOR: parse
    /// Parses and checks `text`, the contents of `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Self, SettingsError> {
        let raw: File = toml::from_str(text).map_err(|error| SettingsError::Parse {
            file: file.to_path_buf(),
            message: error.to_string().trim_end().to_string(),
        })?;
        let invalid = |key: String, reason: String| SettingsError::Invalid {
            file: file.to_path_buf(),
            key,
            reason,
        };
        let settings = Self {
            path: Some(file.to_path_buf()),
            model: ModelSettings {
                id: nonblank(raw.model.id),
                provider: match nonblank(raw.model.provider) {
                    None => None,
                    Some(name) => Some(
                        name.parse::<ProviderKind>()
                            .map_err(|why| invalid("model.provider".into(), why.to_string()))?,
                    ),
                },
                fallback: nonblank(raw.model.fallback),
            },
            permissions: PermissionRules {
                allow: rules("permissions.allow", &raw.permissions.allow)
                    .map_err(|(k, r)| invalid(k, r))?,
                ask: rules("permissions.ask", &raw.permissions.ask)
                    .map_err(|(k, r)| invalid(k, r))?,
                deny: rules("permissions.deny", &raw.permissions.deny)
                    .map_err(|(k, r)| invalid(k, r))?,
            },
            hooks: hooks(raw.hooks).map_err(|(k, r)| invalid(k, r))?,
            mcp_servers: {
                for (name, server) in &raw.mcp_servers {
                    mcp::check_name(name)
                        .map_err(|why| invalid(format!("mcp_servers.{name}"), why.to_string()))?;
                    // Lesson 18's own check: a command, and a transport it speaks.
                    server
                        .clone()
                        .check()
                        .map_err(|why| invalid(format!("mcp_servers.{name}"), why.to_string()))?;
                }
                raw.mcp_servers
            },
            skills_dir: raw.skills.dir.filter(|dir| !dir.as_os_str().is_empty()),
            compaction: raw.compaction,
            recovery: raw.recovery,
            teams: raw.teams,
            workflow: raw.workflow,
        };
        settings.check_numbers().map_err(|(k, r)| invalid(k, r))?;
        Ok(settings)
    }
    // ANCHOR_END: parse
}

fn nonblank(text: Option<String>) -> Option<String> {
    text.map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

/// One list of rules, each checked under its key: `permissions.allow[2]`.
fn rules(key: &str, texts: &[String]) -> Result<Vec<Rule>, (String, String)> {
    texts
        .iter()
        .enumerate()
        .map(|(index, text)| {
            Rule::parse(text).map_err(|why| (format!("{key}[{index}]"), why.to_string()))
        })
        .collect()
}

/// The four lists of hooks, checked and in one list.
fn hooks(section: HooksSection) -> Result<Vec<CommandHook>, (String, String)> {
    let lists = [
        (HookEvent::UserPromptSubmit, section.user_prompt_submit),
        (HookEvent::PreToolUse, section.pre_tool_use),
        (HookEvent::PostToolUse, section.post_tool_use),
        (HookEvent::Stop, section.stop),
    ];
    let mut hooks = Vec::new();
    for (event, entries) in lists {
        for (index, entry) in entries.into_iter().enumerate() {
            let key = |field: &str| format!("hooks.{}[{index}].{field}", event.name());
            if entry.command.trim().is_empty() {
                return Err((key("command"), "is empty".into()));
            }
            if entry.matcher.is_some() && !event.has_tool() {
                return Err((
                    key("matcher"),
                    format!(
                        "{} hooks are not about a tool, so they take no matcher",
                        event.name()
                    ),
                ));
            }
            let timeout = match entry.timeout_secs {
                None => command_hooks::DEFAULT_TIMEOUT,
                Some(secs @ 1..=command_hooks::MAX_TIMEOUT_SECS) => Duration::from_secs(secs),
                Some(secs) => {
                    return Err((
                        key("timeout_secs"),
                        format!(
                            "must be from 1 to {}, got {secs}",
                            command_hooks::MAX_TIMEOUT_SECS
                        ),
                    ));
                }
            };
            let hook = CommandHook::new(event, entry.matcher.as_deref(), &entry.command, timeout)
                .map_err(|why| (key("matcher"), why.to_string()))?;
            hooks.push(hook);
        }
    }
    Ok(hooks)
}
