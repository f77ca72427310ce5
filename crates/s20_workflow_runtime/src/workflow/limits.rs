//! The limits of a workflow script's sandbox, and the errors a script run
//! ends with: each a sentence the model can act on. Kept apart from the
//! engine ([`super::script`]) so the registry and the tool's refusals can
//! name them without depending on the engine.

use std::time::Duration;

// ANCHOR: limits
/// How much a script may use. Every run of a script gets a fresh engine
/// with these limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptLimits {
    /// The engine's heap.
    pub memory_bytes: usize,
    /// Native stack the engine may use (deep recursion ends here).
    pub stack_bytes: usize,
    /// Interrupt checks the script's own code may pass (the engine makes
    /// one about every 10,000 steps): a busy loop ends here.
    pub operations: u64,
    /// The whole run, agents included.
    pub deadline: Duration,
    /// `agent()` calls in one run, answered from the journal or not.
    pub max_agent_calls: usize,
    /// One agent call, from its start to its answer.
    pub call_timeout: Duration,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            stack_bytes: 512 << 10,
            operations: 50_000,
            deadline: Duration::from_secs(2 * 60 * 60),
            max_agent_calls: 500,
            call_timeout: Duration::from_secs(30 * 60),
        }
    }
}
// ANCHOR_END: limits

// ANCHOR: errors
/// Which limit ended a script.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Limit {
    #[error("the script ran out of memory (its limit is {} MiB)", .0 >> 20)]
    Memory(usize),
    #[error("the script's calls nested too deep (its stack limit is {} KiB)", .0 >> 10)]
    Stack(usize),
    #[error("the script used its whole operation budget ({0} interrupt checks): an endless loop?")]
    Operations(u64),
    #[error("the run passed its deadline of {}", secs(.0))]
    Deadline(Duration),
    #[error("the script made more than {0} agent() calls")]
    AgentCalls(usize),
    #[error("agent `{label}` took longer than {}", secs(.after))]
    CallTimeout { label: String, after: Duration },
}

/// Why a script did not run to its `return`. The text is what the model
/// reads, in the notification or in the `Workflow` call's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// The script does not parse.
    #[error("the script does not parse: {message}{}", at(*.line, *.column))]
    Syntax {
        message: String,
        line: Option<u32>,
        column: Option<u32>,
    },
    /// The script threw, and nothing caught it.
    #[error("the script failed: {message}{}", at(*.line, *.column))]
    Runtime {
        message: String,
        line: Option<u32>,
        column: Option<u32>,
    },
    /// A limit of the sandbox ended it.
    #[error("the script was stopped: {0}")]
    Limit(Limit),
    /// The engine itself could not start (it could not allocate, say).
    #[error("the script engine failed: {0}")]
    Engine(String),
}
// ANCHOR_END: errors

fn at(line: Option<u32>, column: Option<u32>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(" (line {line}, column {column})"),
        (Some(line), None) => format!(" (line {line})"),
        _ => String::new(),
    }
}

fn secs(duration: &Duration) -> String {
    format!("{} s", duration.as_secs())
}
