//! Extraction: after each turn, a side query picks out what is worth
//! remembering, and the new memories are written to the store.
//!
//! People rarely say "remember this". A preference is stated in passing —
//! "tabs, please, not spaces" — and then the session ends. So when the
//! model ends its turn, the recent dialogue and the list of existing
//! memories go to the model with one question: anything durable here that
//! is not already saved? The answer is a JSON array of memories, usually
//! empty. Nothing new means nothing is written, and a memory that is
//! already there, by name or by content, is updated or skipped, never
//! written twice.

use std::io;

use serde_json::Value;
use shared::protocol::{ContentBlock, Message, Role};
use shared::text::truncate_chars;

use super::error::{InvalidMemory, NoJsonArray};
use super::file::{Memory, MemoryType, StoredMemory, one_line, slug};
use super::side_query::{SideQuery, SideQueryError, find_json_array};
use super::store::MemoryStore;

/// How many of the last messages the extraction reads.
pub const RECENT_MESSAGES: usize = 10;

/// The dialogue sent to the side query is cut to its last this many
/// characters.
pub const MAX_DIALOGUE_CHARS: usize = 8_000;

/// Room for a few memories in the answer.
pub const EXTRACT_MAX_TOKENS: u32 = 2_000;

// ANCHOR: dialogue
/// The last [`RECENT_MESSAGES`] messages as plain text for the side query,
/// cut to [`MAX_DIALOGUE_CHARS`].
pub fn format_dialogue(history: &[Message]) -> String {
    format_recent(history, RECENT_MESSAGES, MAX_DIALOGUE_CHARS)
}

/// The last `max_messages` messages as plain text, `User: …` and
/// `Assistant: …`, cut to their last `max_chars` characters. Tool calls
/// and results are abbreviated: the facts worth keeping are in what the
/// user said. Recalled `<memories>` and harness reminders are left out, so
/// that a memory is not "discovered" again in its own echo.
pub fn format_recent(history: &[Message], max_messages: usize, max_chars: usize) -> String {
    let start = history.len().saturating_sub(max_messages);
    let mut parts = Vec::new();
    for message in &history[start..] {
        let speaker = match message.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
        };
        let blocks: Vec<String> = message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text, .. }
                    if text.starts_with("<memories>") || text.starts_with("<reminder>") =>
                {
                    None
                }
                ContentBlock::Text { text, .. } => Some(truncate_chars(text.trim(), 2_000)),
                ContentBlock::ToolUse(call) => Some(format!(
                    "[called {} {}]",
                    call.name,
                    truncate_chars(&call.input.to_string(), 200)
                )),
                ContentBlock::ToolResult(result) => Some(format!(
                    "[tool result: {}]",
                    truncate_chars(&one_line(&result.text()), 200)
                )),
                _ => None,
            })
            .filter(|text| !text.is_empty())
            .collect();
        if !blocks.is_empty() {
            parts.push(format!("{speaker}: {}", blocks.join("\n")));
        }
    }
    let dialogue = parts.join("\n\n");
    let total = dialogue.chars().count();
    if total <= max_chars {
        return dialogue;
    }
    // Keep the end: the latest exchange is the one that matters most.
    let skip = total - max_chars;
    let cut: String = dialogue.chars().skip(skip).collect();
    format!("…{cut}")
}
// ANCHOR_END: dialogue

// ANCHOR: prompt
/// The side query's question.
pub fn extraction_prompt(dialogue: &str, existing: &[StoredMemory]) -> String {
    let existing: Vec<String> = existing.iter().map(StoredMemory::catalogue_line).collect();
    let existing = if existing.is_empty() {
        "(none yet)".to_string()
    } else {
        existing.join("\n")
    };
    format!(
        "Read this dialogue between a user and a coding agent and extract what is worth \
         remembering in future sessions: the user's preferences and constraints (type \"user\"), \
         how they want the agent to work (\"feedback\"), facts about the project (\"project\"), \
         where to find things (\"reference\"), and anything the user asked to be remembered. \
         Skip details of the current task and anything the existing memories already cover.\n\n\
         Answer with a JSON array of objects with the fields \"name\" (short, kebab-case), \
         \"type\", \"description\" (one line) and \"body\" (the memory itself; add why and how \
         to apply it when the dialogue says). To correct an existing memory, reuse its name. \
         Answer [] if there is nothing new — that is the usual answer.\n\n\
         Existing memories:\n{existing}\n\nDialogue:\n{dialogue}"
    )
}
// ANCHOR_END: prompt

// ANCHOR: parse
/// One memory from a JSON object `{name, type, description, body}`. A
/// missing description or body is filled from the other; a missing name or
/// an unknown type is refused.
pub fn memory_from_json(item: &Value) -> Result<Memory, InvalidMemory> {
    let text = |field: &str| {
        item.get(field)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
    };
    if !item.is_object() {
        return Err(InvalidMemory::NotAnObject(truncate_chars(
            &item.to_string(),
            60,
        )));
    }
    let name = text("name").ok_or(InvalidMemory::NoName)?;
    let kind =
        text("type")
            .and_then(MemoryType::parse)
            .ok_or_else(|| InvalidMemory::UnknownType {
                name: name.to_string(),
            })?;
    let (description, body) = match (text("description"), text("body")) {
        (Some(description), Some(body)) => (description, body),
        (Some(only), None) | (None, Some(only)) => (only, only),
        (None, None) => {
            return Err(InvalidMemory::NoContent {
                name: name.to_string(),
            });
        }
    };
    Ok(Memory::new(name, kind, description, body))
}

/// The memories in an answer, and a line for each item that was refused.
/// An answer without a JSON array is an error.
pub fn parse_memories(answer: &str) -> Result<(Vec<Memory>, Vec<String>), NoJsonArray> {
    let items =
        find_json_array(answer).ok_or_else(|| NoJsonArray(truncate_chars(answer.trim(), 80)))?;
    let mut memories = Vec::new();
    let mut refused = Vec::new();
    for item in &items {
        match memory_from_json(item) {
            Ok(memory) => memories.push(memory),
            Err(reason) => refused.push(reason.to_string()),
        }
    }
    Ok((memories, refused))
}
// ANCHOR_END: parse

// ANCHOR: dedupe
/// Text reduced to its lowercase words, so that case, punctuation and
/// spacing do not make two equal memories look different.
pub fn normalise(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What extraction did to the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Names of memories written for the first time.
    pub created: Vec<String>,
    /// Names of memories whose content changed.
    pub updated: Vec<String>,
    /// Candidates already in the store, by name or by content.
    pub unchanged: usize,
    /// Items of the answer that were not valid memories.
    pub refused: Vec<String>,
}

/// Writes `candidates` to the store: a new name with new content is
/// created; an existing name is updated if its content differs and skipped
/// if not; new content under another name that an existing memory already
/// holds is skipped. The index is rebuilt once, and only if a file changed.
pub fn apply(store: &MemoryStore, candidates: &[Memory]) -> io::Result<Extracted> {
    let mut existing = store.list();
    let mut report = Extracted::default();
    for candidate in candidates {
        let key = slug(&candidate.name);
        let same_name = existing.iter().position(|stored| {
            stored.file == candidate.file_name() || slug(&stored.memory.name) == key
        });
        if let Some(position) = same_name {
            let old = &existing[position];
            if old.memory.kind == candidate.kind
                && normalise(&old.memory.description) == normalise(&candidate.description)
                && normalise(&old.memory.body) == normalise(&candidate.body)
            {
                report.unchanged += 1;
                continue;
            }
            let old_file = old.file.clone();
            let stored = store.write_file(candidate)?;
            if old_file != stored.file {
                // A hand-named file holding this memory: one file per memory.
                store.remove_file(&old_file)?;
            }
            report.updated.push(stored.memory.name.clone());
            existing[position] = stored;
        } else if existing
            .iter()
            .any(|stored| normalise(&stored.memory.body) == normalise(&candidate.body))
        {
            report.unchanged += 1;
        } else {
            let stored = store.write_file(candidate)?;
            report.created.push(stored.memory.name.clone());
            existing.push(stored);
        }
    }
    if !report.created.is_empty() || !report.updated.is_empty() {
        store.rebuild_index()?;
    }
    Ok(report)
}
// ANCHOR_END: dedupe

// ANCHOR: extract
/// Why extraction wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the extraction side query failed: {0}")]
    SideQuery(#[from] SideQueryError),
    #[error("the extraction answer could not be read: {0}")]
    Unreadable(#[from] NoJsonArray),
    #[error("could not write to the memory store: {0}")]
    Io(#[from] io::Error),
}

/// Runs one extraction over the end of `history`.
pub async fn extract(
    side: &SideQuery,
    store: &MemoryStore,
    history: &[Message],
) -> Result<Extracted, ExtractError> {
    let dialogue = format_dialogue(history);
    if dialogue.is_empty() {
        return Ok(Extracted::default());
    }
    let prompt = extraction_prompt(&dialogue, &store.list());
    let answer = side.ask(&prompt, EXTRACT_MAX_TOKENS).await?;
    let (candidates, refused) = parse_memories(&answer)?;
    let mut report = apply(store, &candidates)?;
    report.refused = refused;
    Ok(report)
}
// ANCHOR_END: extract
