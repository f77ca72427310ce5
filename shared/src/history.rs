//! Keeping the conversation valid.
//!
//! The Messages API accepts a history only if every `tool_use` in an
//! assistant message is answered by exactly one `tool_result` at the start
//! of the next user message. [`validate`] checks exactly that, and every
//! lesson's tests run it after every fault they stage. [`push_user`] appends
//! user content without ever producing two user messages in a row.

use std::collections::HashSet;

use crate::protocol::{ContentBlock, Message, Role};

/// Appends user content. If the history already ends with a user message
/// (a turn that failed or was cancelled after its results were stored), the
/// new blocks join that message, after what it holds, so results stay first.
pub fn push_user(history: &mut Vec<Message>, blocks: Vec<ContentBlock>) {
    match history.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(blocks),
        _ => history.push(Message {
            role: Role::User,
            content: blocks,
        }),
    }
}

/// Checks the pairing rules; the error names the first broken message.
pub fn validate(history: &[Message]) -> Result<(), String> {
    if let Some(first) = history.first()
        && first.role != Role::User
    {
        return Err("message 0: the history must start with a user message".into());
    }
    for (index, pair) in history.windows(2).enumerate() {
        if pair[0].role == pair[1].role {
            return Err(format!(
                "messages {index} and {}: two {:?} messages in a row",
                index + 1,
                pair[0].role
            ));
        }
    }
    for (index, message) in history.iter().enumerate() {
        if message.content.is_empty() {
            return Err(format!("message {index}: empty content"));
        }
        match message.role {
            Role::Assistant => check_answered(history, index)?,
            Role::User => check_results_lead(history, index)?,
        }
    }
    Ok(())
}

/// Every `tool_use` of assistant message `index` is answered once, in
/// order, by the next message. A trailing assistant message with calls is
/// allowed only while its round is still running, so it is an error here.
fn check_answered(history: &[Message], index: usize) -> Result<(), String> {
    let calls: Vec<&str> = history[index]
        .tool_uses()
        .map(|call| call.id.as_str())
        .collect();
    if calls.is_empty() {
        return Ok(());
    }
    let Some(next) = history.get(index + 1) else {
        return Err(format!(
            "message {index}: tool calls {calls:?} have no results"
        ));
    };
    let answers: Vec<&str> = next.tool_result_ids().collect();
    if answers != calls {
        return Err(format!(
            "message {}: results {answers:?} do not answer the calls {calls:?} of message {index} one to one and in order",
            index + 1
        ));
    }
    Ok(())
}

/// A user message's `tool_result` blocks come first and answer calls of the
/// assistant message just before it.
fn check_results_lead(history: &[Message], index: usize) -> Result<(), String> {
    let message = &history[index];
    let mut seen_other = false;
    for block in &message.content {
        match block {
            ContentBlock::ToolResult(_) if seen_other => {
                return Err(format!(
                    "message {index}: a tool_result comes after other content"
                ));
            }
            ContentBlock::ToolResult(_) => {}
            _ => seen_other = true,
        }
    }
    let results: HashSet<&str> = message.tool_result_ids().collect();
    if results.is_empty() {
        return Ok(());
    }
    let calls: HashSet<&str> = match index.checked_sub(1).map(|i| &history[i]) {
        Some(previous) => previous.tool_uses().map(|call| call.id.as_str()).collect(),
        None => HashSet::new(),
    };
    match results.iter().find(|id| !calls.contains(*id)) {
        Some(orphan) => Err(format!(
            "message {index}: tool_result {orphan} answers no tool_use of the message before"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolResult, ToolUse};
    use serde_json::json;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse(ToolUse {
            id: id.into(),
            name: "bash".into(),
            input: json!({}),
        })
    }

    fn result(id: &str) -> ContentBlock {
        ContentBlock::ToolResult(ToolResult::ok(id, "ok"))
    }

    fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
        Message { role, content }
    }

    #[test]
    fn accepts_paired_rounds() {
        let history = vec![
            Message::user_text("go"),
            msg(
                Role::Assistant,
                vec![ContentBlock::text("ok"), call("a"), call("b")],
            ),
            msg(
                Role::User,
                vec![result("a"), result("b"), ContentBlock::text("note")],
            ),
            Message::assistant_text("done"),
        ];
        assert_eq!(validate(&history), Ok(()));
    }

    #[test]
    fn rejects_missing_reordered_orphaned_and_late_results() {
        let missing = vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("a")]),
        ];
        assert!(validate(&missing).is_err());

        let reordered = vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("a"), call("b")]),
            msg(Role::User, vec![result("b"), result("a")]),
        ];
        assert!(validate(&reordered).is_err());

        let orphan = vec![
            Message::user_text("go"),
            Message::assistant_text("hi"),
            msg(Role::User, vec![result("zzz")]),
        ];
        assert!(validate(&orphan).unwrap_err().contains("zzz"));

        let late = vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("a")]),
            msg(Role::User, vec![ContentBlock::text("first"), result("a")]),
        ];
        assert!(validate(&late).unwrap_err().contains("after other content"));
    }

    #[test]
    fn push_user_merges_after_existing_results() {
        let mut history = vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("a")]),
            msg(Role::User, vec![result("a")]),
        ];
        push_user(&mut history, vec![ContentBlock::text("next question")]);
        assert_eq!(history.len(), 3);
        assert_eq!(validate(&history), Ok(()));
        assert_eq!(history[2].text(), "next question");
    }
}
