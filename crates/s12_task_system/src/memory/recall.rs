//! Recall: which memories to load for the user's latest prompt.
//!
//! The index in the system prompt only says what exists. To bring the
//! bodies of the relevant memories into the context, a side query shows
//! the model the catalogue (name, type, description), the end of the
//! conversation so far and the prompt, and asks for the names worth
//! loading — at most [`MAX_RECALLED`]. The conversation is there because a
//! prompt often means nothing alone: "do the same for the other module" is
//! about whatever came before it. If that call fails, or its answer cannot
//! be read, simple keyword matching on the names and descriptions picks
//! instead, so a flaky model costs precision, never the memories themselves.

use shared::protocol::Message;
use shared::text::truncate_chars;

use super::extract::format_recent;
use super::file::{StoredMemory, one_line, slug};
use super::side_query::{SideQuery, find_json_array};
use super::store::{MEMORY_DIR, MemoryStore};

/// The most memories loaded for one prompt.
pub const MAX_RECALLED: usize = 5;

/// The side query answers with a short list of names.
pub const RECALL_MAX_TOKENS: u32 = 300;

/// Each loaded body is cut to this many characters; the file keeps it all.
pub const MAX_BODY_CHARS: usize = 4_000;

/// The prompt is cut to this many characters in the side query.
pub const MAX_PROMPT_CHARS: usize = 4_000;

/// How many messages before the prompt the side query is shown: the last
/// few exchanges, which is what a follow-up prompt refers to.
pub const CONTEXT_MESSAGES: usize = 6;

/// Those messages are cut to their last this many characters, so the
/// question stays small however long the session is.
pub const MAX_CONTEXT_CHARS: usize = 3_000;

// ANCHOR: prompt
/// The conversation before the latest prompt, for the side query: the last
/// [`CONTEXT_MESSAGES`] messages before the one that holds the prompt, as
/// plain dialogue (see [`format_recent`]), at most [`MAX_CONTEXT_CHARS`].
pub fn conversation_before_prompt(history: &[Message]) -> String {
    let before = &history[..history.len().saturating_sub(1)];
    format_recent(before, CONTEXT_MESSAGES, MAX_CONTEXT_CHARS)
}

/// The side query's question. `conversation` is what came before the
/// prompt (empty in a session's first turn).
pub fn selection_prompt(prompt: &str, conversation: &str, memories: &[StoredMemory]) -> String {
    let catalogue: Vec<String> = memories.iter().map(StoredMemory::catalogue_line).collect();
    let conversation = if conversation.is_empty() {
        String::new()
    } else {
        format!("Conversation before the latest request (its end):\n{conversation}\n\n")
    };
    format!(
        "Which of these saved memories are relevant to the user's latest request? Read the \
         request in the light of the conversation before it, if there is one: \"do the same \
         for the other module\" is about what was said earlier. Answer with a JSON array of \
         their names, most relevant first, at most {MAX_RECALLED}, for example \
         [\"user-prefers-tabs\"]. Answer [] if none is.\n\n\
         {conversation}Latest request:\n{}\n\nMemories:\n{}",
        truncate_chars(prompt, MAX_PROMPT_CHARS),
        catalogue.join("\n")
    )
}
// ANCHOR_END: prompt

// ANCHOR: parse
/// Reads the side query's answer: a JSON array of names, or else one name
/// per line (bullets, numbers, quotes and `.md` are tolerated). Returns the
/// indices of the memories named, in the order given, or `None` when the
/// answer names nothing that exists and is not an explicit "none" — the
/// caller then falls back to keywords.
pub fn parse_selection(answer: &str, memories: &[StoredMemory]) -> Option<Vec<usize>> {
    let lookup = |text: &str| {
        let text = text.trim().trim_matches(['"', '\'', '`']).trim();
        let key = slug(text.strip_suffix(".md").unwrap_or(text));
        memories.iter().position(|stored| {
            key == slug(&stored.memory.name) || key == slug(stored.file.trim_end_matches(".md"))
        })
    };
    let (named, found): (usize, Vec<usize>) = if let Some(items) = find_json_array(answer) {
        if items.is_empty() {
            return Some(Vec::new());
        }
        let found = items
            .iter()
            .filter_map(|item| item.as_str().and_then(lookup))
            .collect();
        (items.len(), found)
    } else {
        let lines: Vec<&str> = answer
            .lines()
            .map(|line| {
                line.trim()
                    .trim_start_matches(['-', '*', '•'])
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .trim_start_matches(['.', ')'])
                    .trim()
            })
            .filter(|line| !line.is_empty())
            .collect();
        let none = |line: &str| {
            matches!(
                line.trim_end_matches('.').to_ascii_lowercase().as_str(),
                "none" | "nothing" | "no relevant memories"
            )
        };
        if lines.len() == 1 && none(lines[0]) {
            return Some(Vec::new());
        }
        let found = lines.iter().filter_map(|line| lookup(line)).collect();
        (lines.len(), found)
    };
    if named > 0 && found.is_empty() {
        return None;
    }
    let mut unique = Vec::new();
    for index in found {
        if !unique.contains(&index) && unique.len() < MAX_RECALLED {
            unique.push(index);
        }
    }
    (!unique.is_empty()).then_some(unique)
}
// ANCHOR_END: parse

// ANCHOR: keywords
/// Words too common to say anything about relevance.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "you", "your", "are", "was", "were", "what",
    "how", "can", "could", "would", "should", "please", "from", "into", "have", "has", "not",
    "all", "any", "about", "use", "make", "let", "its", "our", "but", "who", "why", "when",
    "where", "which", "will", "just", "some", "there", "then", "than", "them", "they",
];

/// The lowercase words of `text` worth matching on.
fn keywords(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|word| word.chars().count() >= 3 && !STOP_WORDS.contains(&word.as_str()))
        .collect()
}

/// Whether two words match: equal, or one starts with the other, so that
/// "prefer" finds "prefers" and "indent" finds "indentation".
fn same_word(a: &str, b: &str) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The fallback: memories whose name or description shares words with the
/// prompt, most shared words first, at most `max`.
pub fn keyword_matches(prompt: &str, memories: &[StoredMemory], max: usize) -> Vec<usize> {
    // ANCHOR: exercise-s09-keywords
    let wanted = keywords(prompt);
    let mut scored: Vec<(usize, usize)> = memories
        .iter()
        .enumerate()
        .map(|(index, stored)| {
            let known = keywords(&format!(
                "{} {}",
                stored.memory.name, stored.memory.description
            ));
            let score = wanted
                .iter()
                .filter(|word| known.iter().any(|other| same_word(word, other)))
                .count();
            (index, score)
        })
        .filter(|(_, score)| *score > 0)
        .collect();
    // A stable sort keeps the store's order among equal scores.
    scored.sort_by_key(|(_, score)| std::cmp::Reverse(*score));
    scored
        .into_iter()
        .take(max)
        .map(|(index, _)| index)
        .collect()
    // ANCHOR_END: exercise-s09-keywords
}
// ANCHOR_END: keywords

// ANCHOR: recall
/// How the memories were chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The side query named them.
    SideQuery,
    /// The side query failed for this reason; keywords chose.
    Keywords(String),
}

/// The memories chosen for one prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    pub memories: Vec<StoredMemory>,
    pub source: Source,
}

/// Chooses the memories to load for `prompt`, which follows
/// `conversation` (see [`conversation_before_prompt`]). Returns `None`
/// without asking the model anything when the store is empty.
pub async fn recall(
    side: &SideQuery,
    store: &MemoryStore,
    prompt: &str,
    conversation: &str,
) -> Option<Recalled> {
    // ANCHOR: exercise-s09-recall
    let memories = store.list();
    if memories.is_empty() {
        return None;
    }
    let question = selection_prompt(prompt, conversation, &memories);
    let answer = side.ask(&question, RECALL_MAX_TOKENS).await;
    let (indices, source) = match answer {
        Ok(text) => match parse_selection(&text, &memories) {
            Some(indices) => (indices, Source::SideQuery),
            None => (
                keyword_matches(prompt, &memories, MAX_RECALLED),
                Source::Keywords(format!(
                    "its answer named no saved memory: {:?}",
                    truncate_chars(text.trim(), 80)
                )),
            ),
        },
        Err(error) => (
            keyword_matches(prompt, &memories, MAX_RECALLED),
            Source::Keywords(error.to_string()),
        ),
    };
    let chosen = indices
        .into_iter()
        .filter_map(|index| memories.get(index).cloned())
        .collect();
    Some(Recalled {
        memories: chosen,
        source,
    })
    // ANCHOR_END: exercise-s09-recall
}
// ANCHOR_END: recall

// ANCHOR: block
/// The text block that brings the chosen memories into the context.
pub fn render_block(memories: &[StoredMemory]) -> String {
    let entries: Vec<String> = memories
        .iter()
        .map(|stored| {
            format!(
                "## {} ({}, {MEMORY_DIR}/{})\n{}\n\n{}",
                stored.memory.name,
                stored.memory.kind,
                stored.file,
                one_line(&stored.memory.description),
                truncate_chars(&stored.memory.body, MAX_BODY_CHARS)
            )
        })
        .collect();
    format!(
        "<memories>\nSaved memories relevant to this request:\n\n{}\n</memories>",
        entries.join("\n\n")
    )
}
// ANCHOR_END: block
