//! Permission rules from the settings file, in Claude Code's notation.
//!
//! A rule names a tool, and for four tools also what the call does:
//!
//! | rule                  | matches                                                  |
//! |-----------------------|----------------------------------------------------------|
//! | `Bash`                | every `bash` call                                        |
//! | `Bash(git status:*)`  | a command that is `git status` followed by anything      |
//! | `Bash(npm run *)`     | a command matching the wildcard (`*` is any text)        |
//! | `Bash(ls -la)`        | exactly that command                                     |
//! | `Read(src/**)`        | `read_file` of a path under `src/` (relative to the workspace) |
//! | `Write(*.md)`         | `write_file` of any `.md` file, at any depth (no `/`: the file name) |
//! | `Edit(/etc/**)`       | `edit_file` of a path under the absolute `/etc/`         |
//! | `spawn_teammate`      | that tool, by its own name                               |
//! | `Workflow(script)`    | a `Workflow` call that sends a script (lesson 20)        |
//! | `mcp__docs__*`        | every tool whose name matches (`*` is any text)          |
//! | `mcp__docs`           | every tool of the MCP server `docs`                      |
//!
//! `Bash`, `Read`, `Write`, `Edit` and `Glob` are Claude Code's names for
//! `bash`, `read_file`, `write_file`, `edit_file` and `glob`; either
//! spelling works.
//!
//! A shell command can hide a second command behind `&&`, `;`, `|` or
//! `$(…)`. So a `deny` or `ask` rule matches when *any* part of the command
//! matches it, and an `allow` rule only a command that is one plain
//! command (no operators, no redirections) matching it; a compound command
//! falls through to the lesson's own gate. Like lesson 3's lists this reads
//! the command as text: a seat belt, not a wall.

use std::fmt;
use std::path::Path;

use shared::protocol::ToolUse;
use shared::tools::Workspace;

use super::pattern::Wildcard;
use crate::mcp::names;

/// What a rule list says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        })
    }
}

// ANCHOR: decide
/// The three lists of the settings file's `[permissions]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionRules {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
}

impl PermissionRules {
    /// The first rule that decides `call`: a `deny` rule before an `ask`
    /// rule before an `allow` rule, whatever their order in the file.
    /// `None`: no rule matches, and the lesson's own gate decides.
    pub fn decide<'a>(
        &'a self,
        call: &ToolUse,
        workspace: &Workspace,
    ) -> Option<(Verdict, &'a Rule)> {
        let call = Call::of(call, workspace);
        let found =
            |rules: &'a [Rule], whole: bool| rules.iter().find(|rule| rule.matches(&call, whole));
        if let Some(rule) = found(&self.deny, false) {
            return Some((Verdict::Deny, rule));
        }
        if let Some(rule) = found(&self.ask, false) {
            return Some((Verdict::Ask, rule));
        }
        found(&self.allow, true).map(|rule| (Verdict::Allow, rule))
    }

    /// How many rules there are in all.
    pub fn len(&self) -> usize {
        self.allow.len() + self.ask.len() + self.deny.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
// ANCHOR_END: decide

impl PermissionRules {
    /// The rules that name an MCP server none of `servers` (the configured
    /// servers' real names) is, once both are normalised: such a rule
    /// matches no tool, which is worth a warning at start-up.
    pub fn unknown_mcp_servers<'a>(&'a self, servers: &[String]) -> Vec<&'a Rule> {
        let known: Vec<String> = servers.iter().map(|name| names::normalize(name)).collect();
        [&self.deny, &self.ask, &self.allow]
            .into_iter()
            .flatten()
            .filter(|rule| {
                rule.tool
                    .mcp_server()
                    .is_some_and(|server| !known.iter().any(|known| known == server))
            })
            .collect()
    }
}

/// One rule, as written and as parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    tool: ToolPattern,
    what: Option<Specifier>,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The part in parentheses: what the command or the path must be.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Specifier {
    /// `git status:*`: this command, then anything after a space.
    CommandPrefix(String),
    /// `npm run *` or `ls -la`: the whole command.
    Command(Wildcard),
    Path(PathPattern),
    /// `Workflow(script)`: a call that sends a script.
    Script,
}

/// Why a rule from the settings file was refused: the rule as written and
/// what is wrong with it, for the settings file's refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a rule: {why}")]
pub struct RuleError {
    text: String,
    why: RuleProblem,
}

/// What is wrong with a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    #[error("it is empty")]
    Empty,
    #[error("text after the closing ')'")]
    TextAfterParenthesis,
    #[error("missing ')'")]
    MissingParenthesis,
    #[error(transparent)]
    Tool(#[from] ToolPatternError),
    #[error("nothing between the parentheses (write {0} alone to match every call)")]
    EmptyParentheses(String),
    #[error("only Bash, Read, Write and Edit take a (…) part, and {0} is not one of them")]
    TakesNothing(String),
    #[error("Workflow takes only (script), which matches a call that sends a script")]
    WorkflowTakesScript,
}

/// Why a tool name pattern (a rule's tool, a hook's matcher) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolPatternError {
    #[error("no tool name")]
    Empty,
    #[error(
        "{text:?} is not a tool name: it has {bad:?} (a name has letters, digits, _ - . and \
         the wildcards * and ?)"
    )]
    NotAName { text: String, bad: char },
}

// ANCHOR: parse
impl Rule {
    /// Parses `Tool` or `Tool(specifier)`. The error says what is wrong, for
    /// the settings file's refusal.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let not_a_rule = |why: RuleProblem| RuleError {
            text: text.to_string(),
            why,
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(not_a_rule(RuleProblem::Empty));
        }
        let (name, inner) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((name, rest)) => {
                let Some(inner) = rest.strip_suffix(')') else {
                    return Err(not_a_rule(if rest.contains(')') {
                        RuleProblem::TextAfterParenthesis
                    } else {
                        RuleProblem::MissingParenthesis
                    }));
                };
                (name, Some(inner))
            }
        };
        let tool = ToolPattern::parse(name).map_err(|error| not_a_rule(error.into()))?;
        let what = match inner {
            None => None,
            Some(inner) if inner.trim().is_empty() => {
                return Err(not_a_rule(RuleProblem::EmptyParentheses(name.to_string())));
            }
            Some(inner) => Some(match tool.takes() {
                Takes::Command => command_specifier(inner.trim()),
                Takes::Path => Specifier::Path(PathPattern::new(inner.trim())),
                Takes::Script if inner.trim() == "script" => Specifier::Script,
                Takes::Script => return Err(not_a_rule(RuleProblem::WorkflowTakesScript)),
                Takes::Nothing => {
                    return Err(not_a_rule(RuleProblem::TakesNothing(name.to_string())));
                }
            }),
        };
        Ok(Self {
            text: trimmed.to_string(),
            tool,
            what,
        })
    }
    // ANCHOR_END: parse

    /// Whether the rule matches `call`; with `whole`, a compound shell
    /// command matches no command rule (see the module documentation).
    fn matches(&self, call: &Call<'_>, whole: bool) -> bool {
        if !self.tool.matches(call.name) {
            return false;
        }
        match &self.what {
            None => true,
            Some(Specifier::Path(pattern)) => {
                call.path.as_ref().is_some_and(|path| pattern.matches(path))
            }
            Some(Specifier::Script) => call.script,
            Some(command_rule) => {
                let Some(command) = call.command else {
                    return false;
                };
                if whole {
                    is_plain(command) && command_matches(command_rule, &normalise(command))
                } else {
                    parts(command).any(|part| command_matches(command_rule, &part))
                }
            }
        }
    }
}

fn command_specifier(inner: &str) -> Specifier {
    match inner.strip_suffix(":*") {
        Some(prefix) => Specifier::CommandPrefix(normalise(prefix)),
        None => Specifier::Command(Wildcard::any(&normalise(inner))),
    }
}

fn command_matches(rule: &Specifier, command: &str) -> bool {
    match rule {
        Specifier::CommandPrefix(prefix) => {
            command == prefix
                || command
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.starts_with(' '))
        }
        Specifier::Command(wildcard) => wildcard.matches(command),
        Specifier::Path(_) | Specifier::Script => false,
    }
}

/// The characters that join, nest or redirect commands.
const SHELL_OPERATORS: &[char] = &[';', '&', '|', '\n', '(', ')', '`', '$', '<', '>'];

/// Whether `command` is one plain command: nothing a second command could
/// hide behind, no redirection.
fn is_plain(command: &str) -> bool {
    !command.contains(SHELL_OPERATORS)
}

/// The commands `command` is made of, split at every operator, each with
/// its spaces normalised.
fn parts(command: &str) -> impl Iterator<Item = String> + '_ {
    command
        .split(SHELL_OPERATORS)
        .map(normalise)
        .filter(|part| !part.is_empty())
}

/// Runs of whitespace as one space, none at the ends: `git  status` is
/// `git status` to a rule as it is to the shell.
fn normalise(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The tool part of a rule (and of a hook's matcher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPattern {
    name: Wildcard,
    /// The pattern as it matches (aliases resolved, MCP names normalised).
    text: String,
}

/// What the parentheses of a tool's rule hold.
enum Takes {
    Command,
    Path,
    /// `Workflow(script)` (lesson 20).
    Script,
    Nothing,
}

impl ToolPattern {
    /// `Bash`, `read_file`, `mcp__docs__*`, `mcp__docs`…
    pub fn parse(text: &str) -> Result<Self, ToolPatternError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ToolPatternError::Empty);
        }
        // An MCP name may have any character its server chose; it is
        // normalised below.
        if let Some(bad) = text
            .chars()
            .filter(|_| !text.starts_with(names::PREFIX))
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | '?')))
        {
            return Err(ToolPatternError::NotAName {
                text: text.to_string(),
                bad,
            });
        }
        let name = match text {
            "Bash" => "bash".to_string(),
            "Read" => "read_file".to_string(),
            "Write" => "write_file".to_string(),
            "Edit" => "edit_file".to_string(),
            "Glob" => "glob".to_string(),
            // An MCP tool is offered under its normalised name (`my.docs`
            // becomes `my_docs`), so a rule written with the server's real
            // name is normalised the same way, its wildcards kept.
            mcp if mcp.starts_with(names::PREFIX) => {
                let name = normalize_pattern(mcp);
                // `mcp__docs`, a server without a tool: all of its tools.
                if name[names::PREFIX.len()..].contains("__") {
                    name
                } else {
                    format!("{name}__*")
                }
            }
            other => other.to_string(),
        };
        Ok(Self {
            name: Wildcard::any(&name),
            text: name,
        })
    }

    /// Whether the tool called `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.name.matches(name)
    }

    /// The MCP server a pattern names (`docs` for `mcp__docs__*`), as
    /// normalised; `None` for other tools and when the server part has a
    /// wildcard.
    pub fn mcp_server(&self) -> Option<&str> {
        let server = self.text.strip_prefix(names::PREFIX)?;
        let server = server.split("__").next().unwrap_or_default();
        (!server.is_empty() && !server.contains(['*', '?'])).then_some(server)
    }

    fn takes(&self) -> Takes {
        if self.name == Wildcard::any("bash") {
            Takes::Command
        } else if ["read_file", "write_file", "edit_file"]
            .iter()
            .any(|tool| self.name == Wildcard::any(tool))
        {
            Takes::Path
        } else if self.name == Wildcard::any("Workflow") {
            Takes::Script
        } else {
            Takes::Nothing
        }
    }
}

/// `pattern` normalised as [`names::normalize`] does tool names, keeping
/// `*` and `?` as wildcards.
fn normalize_pattern(pattern: &str) -> String {
    pattern
        .chars()
        .map(|c| match c {
            '*' | '?' => c.to_string(),
            c => names::normalize(&c.to_string()),
        })
        .collect()
}

/// A path rule: anchored at the workspace (`src/**`), absolute
/// (`/etc/**`), or a file name at any depth (`*.md`, no `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PathPattern {
    wildcard: Wildcard,
    anchor: Anchor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Workspace,
    Absolute,
    FileName,
}

impl PathPattern {
    fn new(pattern: &str) -> Self {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let anchor = if pattern.starts_with('/') {
            Anchor::Absolute
        } else if pattern.contains('/') {
            Anchor::Workspace
        } else {
            Anchor::FileName
        };
        Self {
            wildcard: Wildcard::path(pattern),
            anchor,
        }
    }

    fn matches(&self, path: &CallPath) -> bool {
        match self.anchor {
            Anchor::Absolute => self.wildcard.matches(&path.absolute),
            Anchor::Workspace => path
                .relative
                .as_deref()
                .is_some_and(|relative| self.wildcard.matches(relative)),
            Anchor::FileName => Path::new(&path.absolute)
                .file_name()
                .is_some_and(|name| self.wildcard.matches(&name.to_string_lossy())),
        }
    }
}

/// What of a call the rules look at.
struct Call<'a> {
    name: &'a str,
    command: Option<&'a str>,
    path: Option<CallPath>,
    /// A `Workflow` call that sends a script.
    script: bool,
}

/// A file tool's path, inside the workspace (relative to it) or not.
struct CallPath {
    relative: Option<String>,
    absolute: String,
}

impl<'a> Call<'a> {
    fn of(call: &'a ToolUse, workspace: &Workspace) -> Self {
        let text = |field: &str| call.input.get(field).and_then(|value| value.as_str());
        let path = text("path").map(|path| {
            // The path the file tool would open, when it would open one;
            // outside the workspace only absolute and file-name rules apply.
            match workspace.resolve(path) {
                Ok(resolved) => CallPath {
                    relative: resolved
                        .strip_prefix(workspace.root())
                        .ok()
                        .map(|relative| relative.to_string_lossy().into_owned()),
                    absolute: resolved.to_string_lossy().into_owned(),
                },
                Err(_) => CallPath {
                    relative: None,
                    absolute: workspace.root().join(path).to_string_lossy().into_owned(),
                },
            }
        });
        Self {
            name: &call.name,
            command: (call.name == "bash").then(|| text("command")).flatten(),
            path,
            script: call.name == "Workflow" && call.input.get("script").is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, input: serde_json::Value) -> ToolUse {
        ToolUse {
            id: "t".into(),
            name: name.into(),
            input,
        }
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionRules {
        let parse = |list: &[&str]| list.iter().map(|r| Rule::parse(r).unwrap()).collect();
        PermissionRules {
            allow: parse(allow),
            ask: parse(ask),
            deny: parse(deny),
        }
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (text, why) in [
            ("Bash(", "\"Bash(\" is not a rule: missing ')'"),
            ("", "\"\" is not a rule: it is empty"),
            (
                "Bash(ls)x",
                "\"Bash(ls)x\" is not a rule: text after the closing ')'",
            ),
            (
                "Bash()",
                "nothing between the parentheses (write Bash alone",
            ),
            ("ba sh", "\"ba sh\" is not a tool name: it has ' '"),
            (
                "task(x)",
                "only Bash, Read, Write and Edit take a (…) part, and task is not",
            ),
        ] {
            let error = Rule::parse(text).unwrap_err().to_string();
            assert!(error.contains(why), "{text:?}: {error}");
        }
    }

    #[test]
    fn commands_match_by_prefix_wildcard_or_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let rules = rules(
            &["Bash(git status:*)", "Bash(cargo *)"],
            &[],
            &["Bash(curl:*)"],
        );
        let bash = |command: &str| call("bash", json!({ "command": command }));
        let verdict = |command: &str| rules.decide(&bash(command), &workspace).map(|(v, _)| v);
        assert_eq!(verdict("git status"), Some(Verdict::Allow));
        assert_eq!(verdict("git  status --short"), Some(Verdict::Allow));
        assert_eq!(verdict("git statusx"), None);
        assert_eq!(verdict("cargo test -p x"), Some(Verdict::Allow));
        // A compound command is not allowed by a rule for its first part...
        assert_eq!(verdict("git status && rm -rf x"), None);
        // ...but is denied by a rule for any of its parts.
        assert_eq!(verdict("echo hi; curl evil.example"), Some(Verdict::Deny));
        assert_eq!(verdict("echo $(curl evil.example)"), Some(Verdict::Deny));
        assert_eq!(verdict("curl"), Some(Verdict::Deny));
        assert_eq!(verdict("curly"), None);
    }

    #[test]
    fn deny_beats_ask_beats_allow_whatever_the_order() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let rules = rules(&["Write"], &["Write(*.md)"], &["Write(secrets/**)"]);
        let write = |path: &str| call("write_file", json!({ "path": path, "content": "" }));
        let verdict = |path: &str| rules.decide(&write(path), &workspace).map(|(v, _)| v);
        assert_eq!(verdict("src/a.rs"), Some(Verdict::Allow));
        assert_eq!(verdict("docs/deep/a.md"), Some(Verdict::Ask));
        assert_eq!(verdict("secrets/a.md"), Some(Verdict::Deny));
        assert_eq!(verdict("./secrets/x"), Some(Verdict::Deny));
    }

    #[test]
    fn paths_are_relative_to_the_workspace_unless_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let rules = rules(&["Read(src/**)"], &[], &["Read(/etc/**)", "Read(*.env)"]);
        let read = |path: &str| call("read_file", json!({ "path": path }));
        let verdict = |path: &str| rules.decide(&read(path), &workspace).map(|(v, _)| v);
        assert_eq!(verdict("src/lib.rs"), Some(Verdict::Allow));
        assert_eq!(verdict("src/a/b.rs"), Some(Verdict::Allow));
        assert_eq!(verdict("tests/a.rs"), None);
        assert_eq!(verdict("/etc/passwd"), Some(Verdict::Deny));
        assert_eq!(verdict("config/.env"), Some(Verdict::Deny));
        // Outside the workspace a relative rule never matches.
        assert_eq!(verdict("../src/lib.rs"), None);
    }

    #[test]
    fn tool_names_match_by_alias_wildcard_or_server() {
        for (rule, tool, matches) in [
            ("Bash", "bash", true),
            ("bash", "bash", true),
            ("Glob", "glob", true),
            ("mcp__docs__*", "mcp__docs__search", true),
            ("mcp__docs", "mcp__docs__search", true),
            ("mcp__my.docs__*", "mcp__my_docs__search", true),
            ("mcp__my.docs", "mcp__my_docs__search", true),
            ("mcp__docs", "mcp__docsx__search", false),
            ("mcp__docs__search", "mcp__docs__search_all", false),
            ("spawn_teammate", "spawn_teammate", true),
            ("*_task", "create_task", true),
        ] {
            let pattern = ToolPattern::parse(rule).unwrap();
            assert_eq!(pattern.matches(tool), matches, "{rule} / {tool}");
        }
    }

    #[test]
    fn workflow_script_matches_a_workflow_call_that_sends_a_script() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let rules = rules(&["Workflow(script)"], &[], &[]);
        let by_name = call("Workflow", json!({ "name": "review-changes" }));
        let script = call(
            "Workflow",
            json!({ "name": "mine", "description": "d", "script": "return 1" }),
        );
        assert_eq!(rules.decide(&by_name, &workspace), None);
        assert_eq!(
            rules.decide(&script, &workspace).map(|(v, _)| v),
            Some(Verdict::Allow)
        );
        let error = Rule::parse("Workflow(review)").unwrap_err().to_string();
        assert!(error.contains("Workflow takes only (script)"), "{error}");
    }
}
