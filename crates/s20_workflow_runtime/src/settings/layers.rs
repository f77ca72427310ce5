//! Where each number comes from: the flag, else the environment, else the
//! settings file, else the lesson's default.
//!
//! The earlier lessons read their overrides through a lookup function
//! (`CompactConfig::from_lookup`, `RecoveryPolicy::from_lookup`,
//! `SkillsArgs::or_lookup`). The settings file becomes one more layer of
//! that lookup, under the environment: [`Settings::under`] answers a
//! variable from the environment if it is set there and from the file
//! otherwise. So those config types are built as before, and each knob
//! that has a variable has exactly one precedence rule. The knobs without
//! a variable (the rest of the recovery policy, the team's timings) are set
//! from the file on top of the defaults.
//!
//! | settings key                            | variable                        |
//! |-----------------------------------------|---------------------------------|
//! | `model.id`                              | `MODEL_ID`                      |
//! | `model.fallback`                        | `FALLBACK_MODEL_ID`             |
//! | `skills.dir`                            | `SKILLS_DIR`                    |
//! | `compaction.tool_result_budget_chars`   | `COMPACT_TOOL_RESULT_BUDGET`    |
//! | `compaction.max_messages`               | `COMPACT_MAX_MESSAGES`          |
//! | `compaction.snip_to_messages`           | `COMPACT_SNIP_TO_MESSAGES`      |
//! | `compaction.keep_recent_tool_results`   | `COMPACT_KEEP_RECENT_RESULTS`   |
//! | `compaction.micro_batch_chars`          | `COMPACT_MICRO_BATCH_CHARS`     |
//! | `compaction.threshold_tokens`           | `COMPACT_THRESHOLD_TOKENS`      |
//! | `recovery.base_delay_ms`                | `RECOVERY_BASE_DELAY_MS`        |
//! | `recovery.escalated_max_tokens`         | `RECOVERY_ESCALATED_MAX_TOKENS` |
//! | `workflow.concurrency`                  | `WORKFLOW_CONCURRENCY`          |

use std::time::Duration;

use serde::Deserialize;
use shared::settings::InvalidSetting;

use super::Settings;
use crate::compact::CompactConfig;
use crate::compact::config as compact_env;
use crate::mcp::McpOptions;
use crate::recovery::RecoveryPolicy;
use crate::recovery::policy as recovery_env;
use crate::skills::SkillsArgs;
use crate::skills::discovery::SKILLS_DIR_ENV;
use crate::team::Autonomy;
use crate::workflow::WorkflowOptions;
use crate::workflow::runtime::ENV_CONCURRENCY;

/// The variable `--model`'s default comes from (read by the shared front end).
pub const ENV_MODEL_ID: &str = "MODEL_ID";

/// `[compaction]`: lesson 8's thresholds that have a variable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSettings {
    pub tool_result_budget_chars: Option<usize>,
    pub max_messages: Option<usize>,
    pub snip_to_messages: Option<usize>,
    pub keep_recent_tool_results: Option<usize>,
    pub micro_batch_chars: Option<usize>,
    pub threshold_tokens: Option<usize>,
}

/// `[recovery]`: lesson 11's policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverySettings {
    pub max_attempts: Option<usize>,
    pub base_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
    pub max_retry_after_secs: Option<u64>,
    pub overloads_before_fallback: Option<usize>,
    pub escalated_max_tokens: Option<u32>,
    pub max_continuations: Option<usize>,
}

/// `[teams]`: how lesson 16's idle teammates scan the board.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamSettings {
    pub scan_first_ms: Option<u64>,
    pub scan_max_ms: Option<u64>,
    pub lease_secs: Option<u64>,
}

/// `[workflow]`: lesson 20's cap on workflow agents running at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSettings {
    pub concurrency: Option<usize>,
}

/// Every settings key that stands for a variable, and the variable.
pub const KEYS_OF_VARIABLES: &[(&str, &str)] = &[
    ("model.id", ENV_MODEL_ID),
    ("model.fallback", recovery_env::ENV_FALLBACK_MODEL),
    ("skills.dir", SKILLS_DIR_ENV),
    (
        "compaction.tool_result_budget_chars",
        compact_env::ENV_TOOL_RESULT_BUDGET,
    ),
    ("compaction.max_messages", compact_env::ENV_MAX_MESSAGES),
    (
        "compaction.snip_to_messages",
        compact_env::ENV_SNIP_TO_MESSAGES,
    ),
    (
        "compaction.keep_recent_tool_results",
        compact_env::ENV_KEEP_RECENT_RESULTS,
    ),
    (
        "compaction.micro_batch_chars",
        compact_env::ENV_MICRO_BATCH_CHARS,
    ),
    (
        "compaction.threshold_tokens",
        compact_env::ENV_THRESHOLD_TOKENS,
    ),
    ("recovery.base_delay_ms", recovery_env::ENV_BASE_DELAY_MS),
    (
        "recovery.escalated_max_tokens",
        recovery_env::ENV_ESCALATED_MAX_TOKENS,
    ),
    ("workflow.concurrency", ENV_CONCURRENCY),
];

// ANCHOR: under
impl Settings {
    /// The file's value for `variable`, as the environment would spell it.
    pub fn lookup(&self, variable: &str) -> Option<String> {
        let compaction = &self.compaction;
        let number = |value: Option<usize>| value.map(|n| n.to_string());
        match variable {
            ENV_MODEL_ID => self.model.id.clone(),
            recovery_env::ENV_FALLBACK_MODEL => self.model.fallback.clone(),
            SKILLS_DIR_ENV => self
                .skills_dir
                .as_ref()
                .map(|dir| dir.display().to_string()),
            compact_env::ENV_TOOL_RESULT_BUDGET => number(compaction.tool_result_budget_chars),
            compact_env::ENV_MAX_MESSAGES => number(compaction.max_messages),
            compact_env::ENV_SNIP_TO_MESSAGES => number(compaction.snip_to_messages),
            compact_env::ENV_KEEP_RECENT_RESULTS => number(compaction.keep_recent_tool_results),
            compact_env::ENV_MICRO_BATCH_CHARS => number(compaction.micro_batch_chars),
            compact_env::ENV_THRESHOLD_TOKENS => number(compaction.threshold_tokens),
            recovery_env::ENV_BASE_DELAY_MS => self.recovery.base_delay_ms.map(|n| n.to_string()),
            recovery_env::ENV_ESCALATED_MAX_TOKENS => {
                self.recovery.escalated_max_tokens.map(|n| n.to_string())
            }
            ENV_CONCURRENCY => number(self.workflow.concurrency),
            _ => None,
        }
    }

    /// `env` with this file under it: a variable set in the environment
    /// wins, one that is not is read from the file.
    pub fn under<'a>(
        &'a self,
        env: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |variable| env(variable).or_else(|| self.lookup(variable))
    }
    // ANCHOR_END: under

    // ANCHOR: configs
    /// Lesson 8's thresholds: environment, then file, then defaults.
    pub fn compact_config(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<CompactConfig, InvalidSetting> {
        CompactConfig::from_lookup(self.under(env))
    }

    /// Lesson 11's policy: environment, then file, then defaults; the
    /// knobs without a variable from the file alone.
    pub fn recovery_policy(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RecoveryPolicy, InvalidSetting> {
        let mut policy = RecoveryPolicy::from_lookup(self.under(env))?;
        let file = &self.recovery;
        if let Some(attempts) = file.max_attempts {
            policy.max_attempts = attempts;
        }
        if let Some(millis) = file.max_delay_ms {
            policy.max_delay = Duration::from_millis(millis);
        }
        if let Some(secs) = file.max_retry_after_secs {
            policy.max_retry_after = Duration::from_secs(secs);
        }
        if let Some(overloads) = file.overloads_before_fallback {
            policy.overloads_before_fallback = overloads;
        }
        if let Some(continuations) = file.max_continuations {
            policy.max_continuations = continuations;
        }
        Ok(policy)
    }

    /// Lesson 7's skills directory: the flag, then `SKILLS_DIR`, then the
    /// file.
    pub fn skills(&self, flag: &SkillsArgs, env: impl Fn(&str) -> Option<String>) -> SkillsArgs {
        flag.or_lookup(self.under(env))
    }

    /// Lesson 20's options: the cap from the environment, then the file,
    /// then `base`'s.
    pub fn workflow_options(
        &self,
        base: WorkflowOptions,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<WorkflowOptions, InvalidSetting> {
        base.with_overrides(&self.under(env))
    }

    /// Lesson 18's options: the timeouts from the environment, and the
    /// file's servers, which join those of `.mcp.json` (the workspace's
    /// `.mcp.json` wins on a name both have).
    pub fn mcp_options(
        &self,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Result<McpOptions, InvalidSetting> {
        let mut options = McpOptions::from_lookup(env)?;
        options.servers = self.mcp_servers.clone();
        Ok(options)
    }

    /// Lesson 16's timings, from the file over the defaults.
    pub fn autonomy(&self) -> Autonomy {
        let mut autonomy = Autonomy::default();
        let teams = &self.teams;
        if let Some(millis) = teams.scan_first_ms {
            autonomy.scan_first = Duration::from_millis(millis);
        }
        if let Some(millis) = teams.scan_max_ms {
            autonomy.scan_max = Duration::from_millis(millis);
        }
        if let Some(secs) = teams.lease_secs {
            autonomy.lease = Duration::from_secs(secs);
        }
        autonomy
    }
    // ANCHOR_END: configs

    /// Checks the numbers as the config types will read them, so that a bad
    /// one is refused when the file is loaded, under its own key.
    pub(super) fn check_numbers(&self) -> Result<(), (String, String)> {
        let alone = |variable: &str| self.lookup(variable);
        let named = |error: InvalidSetting| {
            let key = KEYS_OF_VARIABLES
                .iter()
                .find(|(_, variable)| *variable == error.variable)
                .map_or(error.variable.clone(), |(key, _)| (*key).to_string());
            (
                key,
                format!("must be {}, got {}", error.expected, error.value),
            )
        };
        CompactConfig::from_lookup(alone).map_err(named)?;
        RecoveryPolicy::from_lookup(alone).map_err(named)?;
        WorkflowOptions::default()
            .with_overrides(&alone)
            .map_err(named)?;
        let at_least_one = [
            (
                "recovery.max_attempts",
                self.recovery.max_attempts.map(|n| n as u64),
            ),
            (
                "recovery.overloads_before_fallback",
                self.recovery.overloads_before_fallback.map(|n| n as u64),
            ),
            ("teams.scan_first_ms", self.teams.scan_first_ms),
            ("teams.lease_secs", self.teams.lease_secs),
        ];
        for (key, value) in at_least_one {
            if value == Some(0) {
                return Err((key.into(), "must be at least 1, got 0".into()));
            }
        }
        let first = self.autonomy().scan_first;
        if let Some(max) = self.teams.scan_max_ms
            && Duration::from_millis(max) < first
        {
            return Err((
                "teams.scan_max_ms".into(),
                format!(
                    "must be at least the first pause ({} ms), got {max}",
                    first.as_millis()
                ),
            ));
        }
        Ok(())
    }
}
