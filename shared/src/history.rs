//! Keeping the conversation valid.
//!
//! The Messages API accepts a history only if every `tool_use` in an
//! assistant message is answered by exactly one `tool_result` at the start
//! of the next user message. [`validate`] checks exactly that, and every
//! lesson's tests run it after every fault they stage. [`push_user`] appends
//! user content without ever producing two user messages in a row.

use std::collections::HashSet;

use crate::protocol::{ContentBlock, Message, Role};

/// The first rule a history breaks, naming the message that breaks it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// The first message is not the user's.
    #[error("message 0: the history must start with a user message")]
    StartsWithAssistant,
    /// Messages `index` and `index + 1` have the same role.
    #[error("messages {index} and {}: two {role:?} messages in a row", .index + 1)]
    SameRoleTwice {
        /// The position of the first of the two messages, from 0.
        index: usize,
        /// The role both messages have.
        role: Role,
    },
    /// Message `index` holds no blocks.
    #[error("message {index}: empty content")]
    EmptyContent {
        /// The position of the empty message, from 0.
        index: usize,
    },
    /// Assistant message `index` ends the history with calls unanswered.
    #[error("message {index}: tool calls {calls:?} have no results")]
    Unanswered {
        /// The position of the assistant message, from 0.
        index: usize,
        /// The ids of its `tool_use` blocks, in order.
        calls: Vec<String>,
    },
    /// The message after assistant message `index` does not answer its
    /// calls one to one and in order.
    #[error(
        "message {}: results {answers:?} do not answer the calls {calls:?} of message {index} one to one and in order",
        .index + 1
    )]
    Mismatched {
        /// The position of the assistant message, from 0.
        index: usize,
        /// The ids of its `tool_use` blocks, in order.
        calls: Vec<String>,
        /// The `tool_use_id`s of the next message's results, in order.
        answers: Vec<String>,
    },
    /// A `tool_result` of user message `index` follows other content.
    #[error("message {index}: a tool_result comes after other content")]
    ResultAfterContent {
        /// The position of the user message, from 0.
        index: usize,
    },
    /// A `tool_result` of user message `index` answers no call.
    #[error("message {index}: tool_result {id} answers no tool_use of the message before")]
    Orphan {
        /// The position of the user message, from 0.
        index: usize,
        /// The `tool_use_id` no call has.
        id: String,
    },
}

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
pub fn validate(history: &[Message]) -> Result<(), HistoryError> {
    if let Some(first) = history.first()
        && first.role != Role::User
    {
        return Err(HistoryError::StartsWithAssistant);
    }
    for (index, pair) in history.windows(2).enumerate() {
        if pair[0].role == pair[1].role {
            return Err(HistoryError::SameRoleTwice {
                index,
                role: pair[0].role,
            });
        }
    }
    for (index, message) in history.iter().enumerate() {
        if message.content.is_empty() {
            return Err(HistoryError::EmptyContent { index });
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
fn check_answered(history: &[Message], index: usize) -> Result<(), HistoryError> {
    let calls: Vec<&str> = history[index]
        .tool_uses()
        .map(|call| call.id.as_str())
        .collect();
    if calls.is_empty() {
        return Ok(());
    }
    let Some(next) = history.get(index + 1) else {
        return Err(HistoryError::Unanswered {
            index,
            calls: owned(&calls),
        });
    };
    let answers: Vec<&str> = next.tool_result_ids().collect();
    if answers != calls {
        return Err(HistoryError::Mismatched {
            index,
            calls: owned(&calls),
            answers: owned(&answers),
        });
    }
    Ok(())
}

/// A user message's `tool_result` blocks come first and answer calls of the
/// assistant message just before it.
fn check_results_lead(history: &[Message], index: usize) -> Result<(), HistoryError> {
    let message = &history[index];
    let mut seen_other = false;
    for block in &message.content {
        match block {
            ContentBlock::ToolResult(_) if seen_other => {
                return Err(HistoryError::ResultAfterContent { index });
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
        Some(orphan) => Err(HistoryError::Orphan {
            index,
            id: orphan.to_string(),
        }),
        None => Ok(()),
    }
}

/// The ids an error keeps: it outlives the history it was found in.
fn owned(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| id.to_string()).collect()
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
        assert!(validate(&orphan).unwrap_err().to_string().contains("zzz"));

        let late = vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("a")]),
            msg(Role::User, vec![ContentBlock::text("first"), result("a")]),
        ];
        assert!(
            validate(&late)
                .unwrap_err()
                .to_string()
                .contains("after other content")
        );
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
