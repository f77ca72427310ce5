//! A model that plays a script: the demo model and the tests' fake model.
//!
//! Each lesson embeds a script (`demo.json`) that walks the real harness
//! through its chapter's "try it" scenario. Only the model's choices are
//! scripted: the tools really run and the files really change. Tests build
//! scripts in code with [`Reply`] and read back every request the harness
//! sent with [`ScriptedModel::requests`].
//!
//! Replies are consumed in order, one per request, whoever sends it — a
//! subagent's requests take the next replies just like its parent's.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Deserialize;
use serde_json::Value;

use super::{BoxFuture, DeltaSink, Model};
use crate::error::ApiError;
use crate::protocol::{ContentBlock, Delta, Request, Response, StopReason, ToolUse, Usage};

/// One scripted reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Text the model "writes" before its tool calls.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, run in order.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Raw content blocks, used as they are (for tests of unusual replies).
    #[serde(default)]
    pub content: Option<Vec<ContentBlock>>,
    /// Overrides the stop reason (default: `tool_use` when there are tool
    /// calls, else `end_turn`).
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Fail this request instead of replying.
    #[serde(default)]
    pub error: Option<ScriptedError>,
}

/// A tool call in a script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// An API failure a script can stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedError {
    RateLimited,
    Overloaded,
    PromptTooLong,
    Server,
    StreamCutShort,
}

impl ScriptedError {
    fn to_api_error(self) -> ApiError {
        let message = "staged by the script".to_string();
        match self {
            Self::RateLimited => ApiError::RateLimited {
                retry_after: None,
                message,
            },
            Self::Overloaded => ApiError::Overloaded { message },
            Self::PromptTooLong => ApiError::PromptTooLong { message },
            Self::Server => ApiError::Server {
                status: 500,
                message,
            },
            Self::StreamCutShort => ApiError::StreamCutShort { message },
        }
    }
}

impl Reply {
    /// A reply with text only: the model ends its turn.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            tool_calls: Vec::new(),
            content: None,
            stop_reason: None,
            error: None,
        }
    }

    /// A reply that calls one tool.
    pub fn tool(name: impl Into<String>, input: Value) -> Self {
        Self {
            text: None,
            ..Self::text("")
        }
        .and_tool(name, input)
    }

    /// Adds another tool call to this reply.
    pub fn and_tool(mut self, name: impl Into<String>, input: Value) -> Self {
        self.tool_calls.push(ScriptedCall {
            name: name.into(),
            input,
        });
        self
    }

    /// A reply made of these exact content blocks.
    pub fn blocks(content: Vec<ContentBlock>, stop_reason: StopReason) -> Self {
        Self {
            content: Some(content),
            stop_reason: Some(stop_reason),
            ..Self::text("")
        }
    }

    /// Fails the request with this error.
    pub fn error(error: ScriptedError) -> Self {
        Self {
            error: Some(error),
            ..Self::text("")
        }
    }

    /// Overrides the stop reason.
    pub fn with_stop_reason(mut self, stop_reason: StopReason) -> Self {
        self.stop_reason = Some(stop_reason);
        self
    }
}

/// A whole script, as stored in a lesson's `demo.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub replies: Vec<Reply>,
}

impl Script {
    /// Parses a script; a lesson's script is checked by its tests.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// What happens when a request arrives after the last reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenExhausted {
    /// Say plainly, as a text reply, that the demo is over (demo mode).
    Explain,
    /// Fail with [`ApiError::ScriptExhausted`] (tests: an unexpected extra
    /// request is a bug).
    Fail,
}

/// The text the demo model answers with once its script is used up.
pub const DEMO_FINISHED: &str = "[demo model] That is the end of this lesson's demo script, so I have \
nothing real to say about this request. To talk to a real model, set ANTHROPIC_API_KEY (or \
OPENAI_BASE_URL for a local server) and run the lesson again without --demo.";

/// Plays a list of replies in order.
#[derive(Debug)]
pub struct ScriptedModel {
    replies: Vec<Reply>,
    next: AtomicUsize,
    when_exhausted: WhenExhausted,
    requests: Mutex<Vec<Value>>,
    name: &'static str,
}

impl ScriptedModel {
    /// A fake model for tests: an extra request is an error.
    pub fn new(replies: Vec<Reply>) -> Self {
        Self {
            replies,
            next: AtomicUsize::new(0),
            when_exhausted: WhenExhausted::Fail,
            requests: Mutex::new(Vec::new()),
            name: "scripted",
        }
    }

    /// The demo model: plays a lesson's script, then explains that it is done.
    pub fn demo(script: Script) -> Self {
        Self {
            when_exhausted: WhenExhausted::Explain,
            name: "demo",
            ..Self::new(script.replies)
        }
    }

    /// Every request received so far, serialised exactly as a real client
    /// would send it.
    pub fn requests(&self) -> Vec<Value> {
        match self.requests.lock() {
            Ok(requests) => requests.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// How many replies have not been played yet.
    pub fn remaining(&self) -> usize {
        self.replies
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }

    fn record(&self, request: &Request<'_>) {
        let value = serde_json::to_value(request).unwrap_or(Value::Null);
        match self.requests.lock() {
            Ok(mut requests) => requests.push(value),
            Err(poisoned) => poisoned.into_inner().push(value),
        }
    }

    fn play(&self, index: usize, on_delta: &mut DeltaSink<'_>) -> Result<Response, ApiError> {
        let Some(reply) = self.replies.get(index) else {
            return match self.when_exhausted {
                WhenExhausted::Fail => Err(ApiError::ScriptExhausted(format!(
                    "the script has only {} replies",
                    self.replies.len()
                ))),
                WhenExhausted::Explain => {
                    on_delta(Delta::Text(DEMO_FINISHED));
                    Ok(Response {
                        content: vec![ContentBlock::text(DEMO_FINISHED)],
                        stop_reason: Some(StopReason::EndTurn),
                        usage: Usage::default(),
                    })
                }
            };
        };
        if let Some(error) = reply.error {
            return Err(error.to_api_error());
        }
        if let Some(content) = &reply.content {
            for block in content {
                if let ContentBlock::Text { text, .. } = block {
                    on_delta(Delta::Text(text));
                }
            }
            return Ok(Response {
                content: content.clone(),
                stop_reason: reply.stop_reason.clone(),
                usage: Usage::default(),
            });
        }

        let mut content = Vec::new();
        if let Some(text) = reply.text.as_deref().filter(|text| !text.is_empty()) {
            // Stream word by word so the terminal shows text arriving, as it
            // does with a real model.
            for piece in text.split_inclusive(' ') {
                on_delta(Delta::Text(piece));
            }
            content.push(ContentBlock::text(text));
        }
        for (n, call) in reply.tool_calls.iter().enumerate() {
            on_delta(Delta::ToolUseStart { name: &call.name });
            content.push(ContentBlock::ToolUse(ToolUse {
                id: format!("toolu_{}_{index:03}_{n}", self.name),
                name: call.name.clone(),
                input: call.input.clone(),
            }));
        }
        let stop_reason = reply
            .stop_reason
            .clone()
            .unwrap_or(if reply.tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            });
        Ok(Response {
            content,
            stop_reason: Some(stop_reason),
            usage: Usage::default(),
        })
    }
}

impl Model for ScriptedModel {
    fn provider(&self) -> &str {
        self.name
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(async move {
            self.record(request);
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            self.play(index, on_delta)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_a_lesson_script() {
        let script = Script::from_json(
            r#"{"replies": [
                {"text": "Listing.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
                {"text": "Done."}
            ]}"#,
        )
        .unwrap();
        assert_eq!(script.replies.len(), 2);
        assert_eq!(
            script.replies[0].tool_calls[0].input,
            json!({"command": "ls"})
        );
    }

    #[test]
    fn rejects_misspelled_fields() {
        assert!(Script::from_json(r#"{"replies": [{"txt": "oops"}]}"#).is_err());
    }
}
