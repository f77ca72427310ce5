//! The two prompts the goal sends on its own: the kickoff when a goal is
//! set, and the continuation when a turn ended with the goal not met.
//!
//! Both say plainly that they are not evidence. That is for the model's
//! sake — so it does not read "keep working toward: tests passed" as news
//! that they did — not for the gate's: they are delivered through the
//! goal's own queue, which never writes to the evidence log, so the
//! objective they repeat cannot satisfy anything.

// ANCHOR: prompts
/// The first prompt after `/goal <objective>`.
pub fn kickoff(objective: &str) -> String {
    format!(
        "Work toward this goal: {objective}\n\
         The harness decides when it is met, from results it delivers itself (such as the \
         notification of a command run in the background), not from what you or the user say. \
         When you stop, it checks; until the goal is met you will be asked to go on. \
         This message is not evidence."
    )
}

/// The prompt after a turn that ended with the goal not met.
pub fn continuation(objective: &str, reason: &str) -> String {
    format!(
        "Keep working toward the goal: {objective}\n\
         Not met yet: {reason}.\n\
         This reminder is not evidence; only results the harness delivers count."
    )
}
// ANCHOR_END: prompts
