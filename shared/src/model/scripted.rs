//! A model that plays a script: the demo model and the tests' fake model.
//!
//! Each lesson embeds a script (`demo.json`) that walks the real harness
//! through its chapter's "try it" scenario. Only the model's choices are
//! scripted: the tools really run and the files really change. Tests build
//! scripts in code with [`Reply`] and read back every request the harness
//! sent with [`ScriptedModel::requests`].
//!
//! Two kinds of request arrive, and each has its own answers:
//!
//! * **Turns** — requests that offer tools, from the main loop or a
//!   subagent — take the script's replies in order, one each: a subagent's
//!   requests take the next replies just like its parent's.
//! * **Side queries** — requests offered no tools: a summary, a memory
//!   selection, an evaluator's verdict — are answered by [`SideRule`]s,
//!   matched on the request's text, and otherwise by [`DEFAULT_SIDE_REPLY`].
//!   They never consume a turn's reply, so a lesson that adds a side query
//!   does not shift the script of any lesson before it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;

use super::{BoxFuture, DeltaSink, Model};
use crate::error::ApiError;
use crate::protocol::{ContentBlock, Delta, Request, Response, StopReason, ToolUse, Usage};
use crate::sync::LockExt;

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
    /// The tool to call.
    pub name: String,
    /// The tool's input; `{}` if the script leaves it out.
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
    /// [`ApiError::RateLimited`], with no `retry-after`.
    RateLimited,
    /// [`ApiError::Overloaded`].
    Overloaded,
    /// [`ApiError::PromptTooLong`].
    PromptTooLong,
    /// [`ApiError::Server`], status 500.
    Server,
    /// [`ApiError::StreamCutShort`].
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

// ANCHOR: side_rule
/// How a side query (a request offered no tools) is answered: the first
/// rule whose `when` text occurs in the request wins.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideRule {
    /// Text the request's system prompt or messages must contain; empty
    /// matches every side query.
    #[serde(default)]
    pub when: String,
    /// The answer.
    pub reply: Reply,
    /// How many side queries the rule answers before it is used up; `None`
    /// for every one.
    #[serde(default)]
    pub times: Option<usize>,
}

impl SideRule {
    /// A rule answering every side query that mentions `when`.
    pub fn new(when: impl Into<String>, reply: Reply) -> Self {
        Self {
            when: when.into(),
            reply,
            times: None,
        }
    }

    /// The same rule, used up after `times` answers.
    pub fn times(mut self, times: usize) -> Self {
        self.times = Some(times);
        self
    }
}

/// What a side query no rule matches is answered: an empty JSON list, which
/// means "none" to a question that asks for a list ("which memories are
/// relevant?", "what is worth remembering?") and reads as a harmless,
/// empty answer to one that asks for prose.
pub const DEFAULT_SIDE_REPLY: &str = "[]";
// ANCHOR_END: side_rule

/// A whole script, as stored in a lesson's `demo.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Replies to the user's turns' requests, in order.
    pub replies: Vec<Reply>,
    /// Answers for side queries; see [`SideRule`].
    #[serde(default)]
    pub side_replies: Vec<SideRule>,
    /// Replies to turns that something other than the user started (an
    /// event a lesson's mechanism queued), whose number depends on timing:
    /// a turn whose newest message's first block contains a rule's `when`
    /// takes that rule's reply instead of the next one in `replies`. (Only
    /// the first block: events added after a user's prompt do not make the
    /// prompt's turn a reaction.)
    #[serde(default)]
    pub reactions: Vec<SideRule>,
}

impl Script {
    /// Parses a script; a lesson's script is checked by its tests.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// How a lesson turns its `demo.json` into the demo model: [`demo_model`]
/// for a plain [`Script`], or a function of the lesson's own when its
/// script has more to it (lesson 15's team gives each agent a part).
pub type DemoModel = fn(&str) -> Result<Arc<dyn Model>, serde_json::Error>;

/// The demo model of a lesson whose `demo.json` is a plain [`Script`].
pub fn demo_model(json: &str) -> Result<Arc<dyn Model>, serde_json::Error> {
    Ok(Arc::new(ScriptedModel::demo(Script::from_json(json)?)))
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

/// Plays a list of replies in order, and answers side queries by rule.
#[derive(Debug)]
pub struct ScriptedModel {
    replies: Vec<Reply>,
    next: AtomicUsize,
    when_exhausted: WhenExhausted,
    requests: Mutex<Vec<Value>>,
    side: Mutex<SideQueries>,
    /// Added to every reply's number in its tool-use ids; see
    /// [`ScriptedModel::numbered_from`].
    first_number: usize,
    /// Rules for turns started by events; see [`Script::reactions`].
    reactions: Mutex<Vec<(SideRule, usize)>>,
    /// How many reactions have been played, to number their tool calls.
    reacted: AtomicUsize,
    name: &'static str,
}

/// The side-query rules, how often each has answered, and what was asked.
#[derive(Debug, Default)]
struct SideQueries {
    rules: Vec<(SideRule, usize)>,
    requests: Vec<Value>,
}

impl ScriptedModel {
    /// A fake model for tests: an extra request is an error.
    pub fn new(replies: Vec<Reply>) -> Self {
        Self {
            replies,
            next: AtomicUsize::new(0),
            when_exhausted: WhenExhausted::Fail,
            requests: Mutex::new(Vec::new()),
            side: Mutex::new(SideQueries::default()),
            first_number: 0,
            reactions: Mutex::new(Vec::new()),
            reacted: AtomicUsize::new(0),
            name: "scripted",
        }
    }

    /// The demo model: plays a lesson's script, then explains that it is done.
    pub fn demo(script: Script) -> Self {
        let reactions = script.reactions;
        Self {
            when_exhausted: WhenExhausted::Explain,
            name: "demo",
            ..Self::new(script.replies)
        }
        .with_side_rules(script.side_replies)
        .with_reactions(reactions)
    }

    /// Numbers this model's replies from `first` in the tool-use ids it
    /// hands out, so that models which answer agents of one session side
    /// by side (one script each) never hand out the same id.
    pub fn numbered_from(mut self, first: usize) -> Self {
        self.first_number = first;
        self
    }

    /// Adds rules for turns started by events; see [`Script::reactions`].
    pub fn with_reactions(self, rules: impl IntoIterator<Item = SideRule>) -> Self {
        self.reactions
            .locked()
            .extend(rules.into_iter().map(|rule| (rule, 0)));
        self
    }

    /// The reply of the first reaction whose `when` occurs in the newest
    /// message's first block, if one matches and is not used up.
    fn reaction(&self, request: &Request<'_>) -> Option<Reply> {
        let first = request.messages.last()?.content.first()?;
        let text = match first {
            ContentBlock::Text { text, .. } => text.clone(),
            ContentBlock::ToolResult(result) => result.text(),
            _ => return None,
        };
        self.reactions
            .locked()
            .iter_mut()
            .find(|(rule, used)| {
                rule.times.is_none_or(|times| *used < times) && text.contains(&rule.when)
            })
            .map(|(rule, used)| {
                *used += 1;
                rule.reply.clone()
            })
    }

    /// Adds a rule for side queries, after the ones already there.
    pub fn with_side_rule(self, rule: SideRule) -> Self {
        self.with_side_rules([rule])
    }

    /// Adds rules for side queries, after the ones already there.
    pub fn with_side_rules(self, rules: impl IntoIterator<Item = SideRule>) -> Self {
        self.side
            .locked()
            .rules
            .extend(rules.into_iter().map(|rule| (rule, 0)));
        self
    }

    /// Every turn's request (one that offered tools) received so far,
    /// serialised exactly as a real client would send it.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.locked().clone()
    }

    /// Every side query (a request offered no tools) received so far.
    pub fn side_requests(&self) -> Vec<Value> {
        self.side.locked().requests.clone()
    }

    /// How many replies have not been played yet.
    pub fn remaining(&self) -> usize {
        self.replies
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }

    fn record(&self, request: &Request<'_>) {
        let value = serde_json::to_value(request).unwrap_or(Value::Null);
        self.requests.locked().push(value);
    }

    /// Answers a side query by the first rule that matches and is not used
    /// up, or with [`DEFAULT_SIDE_REPLY`].
    fn answer_side_query(
        &self,
        request: &Request<'_>,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Response, ApiError> {
        let value = serde_json::to_value(request).unwrap_or(Value::Null);
        let text = value.to_string();
        let reply = {
            let mut side = self.side.locked();
            side.requests.push(value);
            side.rules
                .iter_mut()
                .find(|(rule, used)| {
                    rule.times.is_none_or(|times| *used < times) && text.contains(&rule.when)
                })
                .map(|(rule, used)| {
                    *used += 1;
                    rule.reply.clone()
                })
        };
        let reply = reply.unwrap_or_else(|| Reply::text(DEFAULT_SIDE_REPLY));
        self.play_reply(&reply, usize::MAX, on_delta)
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
        self.play_reply(reply, self.first_number + index, on_delta)
    }

    fn play_reply(
        &self,
        reply: &Reply,
        index: usize,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Response, ApiError> {
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
            if request.tools.is_empty() {
                return self.answer_side_query(request, on_delta);
            }
            self.record(request);
            if let Some(reply) = self.reaction(request) {
                // Numbered apart from the main script's replies, so tool-use
                // ids never repeat.
                let index = 1_000_000 + self.reacted.fetch_add(1, Ordering::SeqCst);
                return self.play_reply(&reply, index, on_delta);
            }
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

    fn request<'a>(
        messages: &'a [crate::protocol::Message],
        tools: &'a [crate::protocol::ToolSpec],
    ) -> Request<'a> {
        Request {
            model: "m",
            max_tokens: 100,
            system: &[],
            messages,
            tools,
        }
    }

    async fn answer(model: &ScriptedModel, request: &Request<'_>) -> String {
        let mut quiet = |_: Delta<'_>| {};
        model
            .send(request, &mut quiet)
            .await
            .unwrap()
            .into_message()
            .text()
    }

    #[tokio::test]
    async fn side_queries_are_answered_by_rule_and_never_take_a_turns_reply() {
        let tools = [crate::protocol::ToolSpec::new(
            "t",
            "d",
            json!({"type": "object"}),
        )];
        let model = ScriptedModel::new(vec![Reply::text("turn one"), Reply::text("turn two")])
            .with_side_rule(SideRule::new("Summarize", Reply::text("a summary")).times(1));
        let summarise = [crate::protocol::Message::user_text("Summarize this")];
        let select = [crate::protocol::Message::user_text("Which memories?")];
        let hello = [crate::protocol::Message::user_text("hello")];
        assert_eq!(answer(&model, &request(&hello, &tools)).await, "turn one");
        assert_eq!(answer(&model, &request(&summarise, &[])).await, "a summary");
        // Used up: the default answers.
        assert_eq!(
            answer(&model, &request(&summarise, &[])).await,
            DEFAULT_SIDE_REPLY
        );
        assert_eq!(
            answer(&model, &request(&select, &[])).await,
            DEFAULT_SIDE_REPLY
        );
        assert_eq!(answer(&model, &request(&hello, &tools)).await, "turn two");
        assert_eq!(model.requests().len(), 2);
        assert_eq!(model.side_requests().len(), 3);
    }

    #[test]
    fn a_script_carries_its_side_replies() {
        let script = Script::from_json(
            r#"{"replies": [], "side_replies": [{"when": "Summar", "reply": {"text": "s"}}]}"#,
        )
        .unwrap();
        assert_eq!(script.side_replies[0].when, "Summar");
    }

    #[test]
    fn rejects_misspelled_fields() {
        assert!(Script::from_json(r#"{"replies": [{"txt": "oops"}]}"#).is_err());
    }
}
