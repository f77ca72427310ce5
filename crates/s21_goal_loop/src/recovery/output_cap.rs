//! A model that refuses the escalated `max_tokens`.
//!
//! Escalation asks for 64,000 tokens of room, and many models cannot give
//! that much: Claude Opus 4 stops at 32,000, older models and many
//! OpenAI-compatible servers lower still. Such a provider does not cut the
//! reply short; it refuses the whole request with a 400:
//!
//! ```text
//! invalid_request_error: max_tokens: 64000 > 32000, which is the maximum
//! allowed number of output tokens for claude-opus-4-20250514
//! ```
//!
//! That error is final — the same request would be refused again — so
//! without a remedy it ends the turn, and the reply cut at the loop's
//! limit, already on the screen, is lost with it.
//!
//! The refusal has no error kind of its own, so this is the one place where
//! recovery reads an error's text, and it reads it only where the text can
//! mean nothing else: the same request with the loop's own limit was just
//! answered, so when the one with the larger limit is refused and the
//! message names `max_tokens`, the larger limit is what was refused. The
//! model's cap is taken from the message when the message states it.

use shared::error::ApiError;

// ANCHOR: refusal
/// A request refused because its `max_tokens` is over the model's output
/// cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The cap, when the message states one below the refused limit.
    pub cap: Option<u32>,
}

/// Whether `error`, the answer to a request that asked for `asked` output
/// tokens — more than the loop's limit — refuses that limit.
///
/// It must be an invalid request, or a context overflow, whose message
/// names the limit's parameter. A server that words the refusal as a
/// context overflow (vLLM: "`max_tokens` is too large … maximum context
/// length …") is about the limit too. When `same_messages` — the very same
/// messages were just answered with the smaller limit — any context
/// overflow is, named or not: only the limit grew.
pub fn refusal(error: &ApiError, asked: u32, same_messages: bool) -> Option<Refusal> {
    let (message, overflow) = match error {
        ApiError::InvalidRequest { message } => (message, false),
        ApiError::PromptTooLong { message } => (message, true),
        _ => return None,
    };
    let names_the_limit = ["max_tokens", "max_completion_tokens", "max_output_tokens"]
        .iter()
        .any(|parameter| message.contains(parameter));
    (names_the_limit || (overflow && same_messages)).then(|| Refusal {
        cap: stated_cap(message, asked),
    })
}

/// The cap a refusal states, in the wordings of the providers the course
/// talks to: Anthropic's `64000 > 32000`, OpenAI's `at most 16384` and
/// `<= 16384`, `less than or equal to 8192`, DeepSeek's `[1, 8192]`. Only a
/// number below `asked` is taken: anything else is not a cap that would
/// have accepted a smaller request.
pub fn stated_cap(message: &str, asked: u32) -> Option<u32> {
    let markers = [
        format!("{asked} > "),
        "at most ".to_string(),
        "<= ".to_string(),
        "less than or equal to ".to_string(),
        "[1, ".to_string(),
    ];
    markers
        .iter()
        .filter_map(|marker| number_after(message, marker))
        .find(|cap| (1..asked).contains(cap))
}
// ANCHOR_END: refusal

/// The whole number right after the first `marker` in `text`, past any
/// quotes or backticks around it.
fn number_after(text: &str, marker: &str) -> Option<u32> {
    let start = text.find(marker)? + marker.len();
    let rest = text[start..].trim_start_matches(['`', '\'', '"']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(message: &str) -> ApiError {
        ApiError::InvalidRequest {
            message: message.to_string(),
        }
    }

    #[test]
    fn the_providers_wordings_are_recognised_with_their_caps() {
        let cases = [
            (
                "max_tokens: 64000 > 32000, which is the maximum allowed number of output \
                 tokens for claude-opus-4-20250514",
                Some(32_000),
            ),
            (
                "max_tokens is too large: 64000. This model supports at most 16384 completion \
                 tokens, whereas you provided 64000.",
                Some(16_384),
            ),
            (
                "Invalid 'max_tokens': integer above maximum value. Expected a value <= 16384, \
                 but got 64000 instead.",
                Some(16_384),
            ),
            (
                "`max_tokens` must be less than or equal to `8192`, the maximum value for \
                 `max_tokens` is less than the `context_window` for this model",
                Some(8_192),
            ),
            (
                "Invalid max_tokens value, the valid range of max_tokens is [1, 8192]",
                Some(8_192),
            ),
            ("max_tokens is too large for this model", None),
        ];
        for (message, cap) in cases {
            assert_eq!(
                refusal(&invalid(message), 64_000, false),
                Some(Refusal { cap }),
                "{message}"
            );
        }
    }

    #[test]
    fn a_context_overflow_that_names_max_tokens_is_a_refusal_too() {
        let vllm = ApiError::PromptTooLong {
            message: "'max_tokens' or 'max_completion_tokens' is too large: 64000. This \
                      model's maximum context length is 32768 tokens and your request has \
                      1000 input tokens (64000 > 32768 - 1000)."
                .into(),
        };
        assert_eq!(
            refusal(&vllm, 64_000, false),
            Some(Refusal { cap: Some(32_768) })
        );
        // Asked again at that "cap", the server states none smaller.
        let again = ApiError::PromptTooLong {
            message: "'max_tokens' or 'max_completion_tokens' is too large: 32768. This \
                      model's maximum context length is 32768 tokens and your request has \
                      1000 input tokens (32768 > 32768 - 1000)."
                .into(),
        };
        assert_eq!(refusal(&again, 32_768, false), Some(Refusal { cap: None }));
    }

    #[test]
    fn other_errors_are_not_refusals() {
        let too_long = ApiError::PromptTooLong {
            message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
        };
        let other = invalid("messages: roles must alternate between user and assistant");
        let overloaded = ApiError::Overloaded {
            message: "max_tokens".into(),
        };
        for error in [&too_long, &other, &overloaded] {
            assert_eq!(refusal(error, 64_000, false), None, "{error}");
        }
        // Unless the same messages were just accepted with a smaller limit:
        // then an overflow can only be the limit's.
        assert_eq!(
            refusal(&too_long, 64_000, true),
            Some(Refusal { cap: None })
        );
        assert_eq!(refusal(&other, 64_000, true), None);
        // A number that is no cap below the request is not taken as one.
        assert_eq!(stated_cap("max_tokens: 64000 > 64000", 64_000), None);
        assert_eq!(stated_cap("at most 0 tokens", 64_000), None);
    }
}
