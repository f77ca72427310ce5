//! Side queries: small model calls the memory layer makes on its own,
//! outside the conversation.
//!
//! A side query goes through the same model and model id as the agent (the
//! ones in `Setup`), with a one-message history of its own, no tools, and
//! no streaming to the terminal. It never touches the agent's history, so
//! whatever it asks or answers cannot break the conversation's pairing.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shared::error::ApiError;
use shared::model::Model;
use shared::protocol::{Delta, Message, Request, SystemBlock};
use shared::text::truncate_chars;

/// A side query that has not answered by then is given up. The loop does
/// not cancel `on_stop`, so without a bound a silent server would hang the
/// end of the turn.
pub const SIDE_QUERY_TIMEOUT: Duration = Duration::from_secs(90);

/// What every side query is told about its job.
const SYSTEM: &str = "You are the memory component of a coding agent, not the agent itself. \
Follow the instructions exactly and answer only in the format they ask for.";

// ANCHOR: side_query
/// The model the memory layer asks its questions.
#[derive(Clone)]
pub struct SideQuery {
    model: Arc<dyn Model>,
    model_id: String,
}

/// Why a side query gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SideQueryError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

impl SideQuery {
    /// Side queries through `model`, asking for `model_id`.
    pub fn new(model: Arc<dyn Model>, model_id: impl Into<String>) -> Self {
        Self {
            model,
            model_id: model_id.into(),
        }
    }

    /// Sends `prompt` as the only user message and returns the reply's
    /// text (tool calls, if the model makes any, are ignored).
    pub async fn ask(&self, prompt: &str, max_tokens: u32) -> Result<String, SideQueryError> {
        let system = [SystemBlock::text(SYSTEM)];
        let messages = [Message::user_text(prompt)];
        let request = Request {
            model: &self.model_id,
            max_tokens,
            system: &system,
            messages: &messages,
            tools: &[],
        };
        let question = prompt.lines().next().unwrap_or_default();
        tracing::debug!("memory side query: {}", truncate_chars(question, 120));
        // The answer is for the harness, not for the user's terminal.
        let mut quiet = |_: Delta<'_>| {};
        let reply = tokio::time::timeout(SIDE_QUERY_TIMEOUT, self.model.send(&request, &mut quiet))
            .await
            .map_err(|_| SideQueryError::Timeout(SIDE_QUERY_TIMEOUT))??;
        let answer = reply.into_message().text();
        tracing::debug!(
            "memory side query answered: {}",
            truncate_chars(&answer, 300)
        );
        Ok(answer)
    }
}
// ANCHOR_END: side_query

// ANCHOR: json
/// The first JSON array in a model's answer. Models wrap JSON in prose or
/// in a ```json fence often enough that insisting on a bare array would
/// turn good answers into failures, so every `[` is tried in turn until
/// one starts a complete array.
pub fn find_json_array(text: &str) -> Option<Vec<Value>> {
    text.match_indices('[').find_map(|(start, _)| {
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(Value::Array(items))) => Some(items),
            _ => None,
        }
    })
}
// ANCHOR_END: json

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_an_array_in_prose_or_a_fence() {
        assert_eq!(find_json_array("[\"a\"]"), Some(vec![json!("a")]));
        assert_eq!(
            find_json_array("Sure:\n```json\n[\"a\", \"b\"]\n```\nDone [sic]."),
            Some(vec![json!("a"), json!("b")])
        );
        assert_eq!(find_json_array("see [note] then [1]"), Some(vec![json!(1)]));
        assert_eq!(find_json_array("none of them"), None);
        assert_eq!(find_json_array("[unclosed"), None);
    }
}
