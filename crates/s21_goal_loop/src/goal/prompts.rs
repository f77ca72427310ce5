//! The two prompts the goal sends on its own — the kickoff when a goal is
//! set, and the continuation when a turn ended with the goal not met —
//! and the one line the model may write back: that the goal is
//! impossible.
//!
//! Both prompts say plainly that they are not evidence. That is for the
//! model's sake — so it does not read "keep working toward: tests passed"
//! as news that they did — not for the gate's: they are delivered through
//! the goal's own queue, which never writes to the evidence log, so the
//! objective they repeat cannot satisfy anything.

/// How the model ends a goal it cannot meet: a line of its final reply
/// that starts with these words, then the reason.
pub const IMPOSSIBLE_MARKER: &str = "GOAL IMPOSSIBLE:";

// ANCHOR: prompts
/// The first prompt after `/goal <objective>`; `check` is the command
/// given with `--check`, if any.
pub fn kickoff(objective: &str, check: Option<&str>) -> String {
    let judged = match check {
        Some(command) => format!(
            "It is met only when `{command}`, which the harness runs in the workspace each \
             time you stop, exits with status 0; nothing you or the user say changes that."
        ),
        None => "The harness decides when it is met, from results it delivers itself (such \
                 as the notification of a command run in the background), not from what you \
                 or the user say."
            .to_string(),
    };
    format!(
        "Work toward this goal: {objective}\n\
         {judged} When you stop, it checks; until the goal is met you will be asked to go on. \
         If it cannot be met at all, say why and end your reply with a line \
         `{IMPOSSIBLE_MARKER} <the reason>`: the user is told, and the goal ends unmet. \
         This message is not evidence."
    )
}

/// The prompt after a turn that ended with the goal not met; `detail` is
/// the end of the check's output, when the goal has a check.
pub fn continuation(objective: &str, reason: &str, detail: Option<&str>) -> String {
    let detail = match detail {
        Some(output) => format!("Its output ends:\n{output}\n"),
        None => String::new(),
    };
    format!(
        "Keep working toward the goal: {objective}\n\
         Not met yet: {reason}.\n\
         {detail}\
         This reminder is not evidence; only results the harness delivers count."
    )
}
// ANCHOR_END: prompts

// ANCHOR: given_up
/// The reason the model gave for ending the goal as impossible, if its
/// final reply has a line that starts with [`IMPOSSIBLE_MARKER`]. Only
/// the model's own final reply is read, and giving up never meets a goal,
/// so there is nothing here to forge: the worst a stray marker does is
/// stop the work early, with the reason shown to the user.
pub fn given_up(final_reply: &str) -> Option<String> {
    final_reply.lines().find_map(|line| {
        let reason = line
            .trim_start()
            .trim_start_matches(['*', '_', '`'])
            .strip_prefix(IMPOSSIBLE_MARKER)?;
        let reason = reason.trim().trim_matches(['*', '_', '`']).trim();
        Some(if reason.is_empty() {
            "no reason given".to_string()
        } else {
            reason.to_string()
        })
    })
}
// ANCHOR_END: given_up

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_read_from_a_line_of_its_own() {
        assert_eq!(
            given_up("I looked.\nGOAL IMPOSSIBLE: there is no test suite\n"),
            Some("there is no test suite".into())
        );
        assert_eq!(
            given_up("**GOAL IMPOSSIBLE:** no network"),
            Some("no network".into())
        );
        assert_eq!(given_up("GOAL IMPOSSIBLE:"), Some("no reason given".into()));
        assert_eq!(given_up("The goal is not impossible."), None);
        assert_eq!(given_up("It says GOAL IMPOSSIBLE: x mid-line"), None);
    }
}
