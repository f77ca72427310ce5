//! Consolidation: when the store reaches [`CONSOLIDATE_THRESHOLD`] files,
//! merge and prune it.
//!
//! Extraction adds; nothing else removes. Over many sessions the store
//! gathers near-duplicates ("prefers tabs", "indent with tabs") and facts
//! that later ones contradict. So once a write brings the store to ten
//! files, a side query gets every memory, oldest first and each with the
//! time its file was last written, and returns a smaller list: duplicates
//! merged, contradictions resolved in favour of the newer statement, stale
//! entries dropped. If that fails — an API error, an unreadable answer, or
//! an answer that would lose data — a deterministic merge runs instead,
//! which never loses a word and also lets the later statement win.

use std::collections::{BTreeMap, HashSet};
use std::io;

use serde_json::json;
use shared::text::truncate_chars;

use super::error::ConsolidateError;
use super::extract::{memory_from_json, normalise};
use super::file::{Memory, MemoryType, StoredMemory, slug};
use super::side_query::{SideQuery, find_json_array};
use super::store::{MemoryStore, oldest_first};

/// A write that brings the store to this many files triggers consolidation.
pub const CONSOLIDATE_THRESHOLD: usize = 10;

/// Room for the whole consolidated store in the answer.
pub const CONSOLIDATE_MAX_TOKENS: u32 = 8_000;

// ANCHOR: prompt
/// The side query's question: every memory, as JSON, in the order given
/// (oldest first, see [`oldest_first`]).
pub fn consolidation_prompt(memories: &[StoredMemory]) -> String {
    let all: Vec<_> = memories
        .iter()
        .map(|stored| {
            json!({
                "name": stored.memory.name,
                "type": stored.memory.kind.as_str(),
                "description": stored.memory.description,
                "body": stored.memory.body,
                "updated": stored.updated.map(|time| time.to_string()),
            })
        })
        .collect();
    let all = serde_json::to_string_pretty(&all).unwrap_or_default();
    format!(
        "These are all the memories a coding agent keeps about its user and project, oldest \
         first: \"updated\" is when each was last saved, and those without one are older \
         than the rest. Consolidate them: merge duplicates and near-duplicates into one, \
         resolve contradictions in favour of the more specific or more recent statement, and \
         drop what is no longer useful. Keep every distinct fact that still matters.\n\n\
         Answer with the complete new list as a JSON array of objects with the fields \
         \"name\", \"type\" (user, feedback, project or reference), \"description\" and \
         \"body\". It replaces the current list entirely.\n\nMemories:\n{all}"
    )
}
// ANCHOR_END: prompt

// ANCHOR: parse
/// Reads the side query's answer. Because the answer replaces the whole
/// store, it is all or nothing: one invalid item, two memories with the
/// same name, an empty list or a longer list than before, and the answer is
/// refused.
pub fn parse_consolidated(answer: &str, before: usize) -> Result<Vec<Memory>, ConsolidateError> {
    let items = find_json_array(answer).ok_or(ConsolidateError::NoJsonArray)?;
    if items.is_empty() {
        return Err(ConsolidateError::Empty);
    }
    if items.len() > before {
        return Err(ConsolidateError::TooMany {
            found: items.len(),
            before,
        });
    }
    let memories = items
        .iter()
        .map(memory_from_json)
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = HashSet::new();
    for memory in &memories {
        if !names.insert(slug(&memory.name)) {
            return Err(ConsolidateError::DuplicateName(memory.name.clone()));
        }
    }
    Ok(memories)
}
// ANCHOR_END: parse

// ANCHOR: fallback
/// The fallback. With the memories oldest first, it drops exact
/// duplicates (same words in the body), keeping the latest copy; if the
/// store is still at the threshold, it merges each type's memories into one
/// (`user-memories`, …), each old memory becoming a section of the new body,
/// oldest first, under a line that says the later section wins. At most
/// four files remain and no text is lost.
pub fn deterministic_merge(memories: &[StoredMemory]) -> Vec<Memory> {
    let ordered = oldest_first(memories.to_vec());
    // Newest first through the duplicates, so the latest copy is the one
    // kept; then back to oldest first.
    let mut seen = HashSet::new();
    let mut unique: Vec<&StoredMemory> = ordered
        .iter()
        .rev()
        .filter(|stored| seen.insert(normalise(&stored.memory.body)))
        .collect();
    unique.reverse();
    if unique.len() < CONSOLIDATE_THRESHOLD {
        return unique
            .into_iter()
            .map(|stored| stored.memory.clone())
            .collect();
    }
    let mut by_type: BTreeMap<MemoryType, Vec<&StoredMemory>> = BTreeMap::new();
    for stored in unique {
        by_type.entry(stored.memory.kind).or_default().push(stored);
    }
    let merged = by_type
        .into_iter()
        .map(|(kind, group)| match group.as_slice() {
            [single] => single.memory.clone(),
            _ => merge_group(kind, &group),
        })
        .collect();
    distinct_names(merged)
}

/// One memory holding every memory of `group` (oldest first) as a section.
fn merge_group(kind: MemoryType, group: &[&StoredMemory]) -> Memory {
    let names: Vec<&str> = group
        .iter()
        .map(|stored| stored.memory.name.as_str())
        .collect();
    let sections: Vec<String> = group
        .iter()
        .map(|stored| {
            let memory = &stored.memory;
            let updated = stored
                .updated
                .map_or_else(|| "undated".to_string(), |time| time.to_string());
            format!(
                "### {} ({updated})\n{}\n\n{}",
                memory.name, memory.description, memory.body
            )
        })
        .collect();
    Memory::new(
        &format!("{kind}-memories"),
        kind,
        &truncate_chars(&format!("Merged: {}", names.join(", ")), 200),
        &format!(
            "Merged from {} memories, oldest first; where two sections disagree, the later \
             one holds.\n\n{}",
            group.len(),
            sections.join("\n\n")
        ),
    )
}

/// Renames memories whose name another one already took (`x`, `x-2`, …),
/// so that no two share a file and none overwrites another.
fn distinct_names(memories: Vec<Memory>) -> Vec<Memory> {
    let mut taken = HashSet::new();
    memories
        .into_iter()
        .map(|mut memory| {
            let base = slug(&memory.name);
            let mut name = base.clone();
            let mut n = 1;
            while !taken.insert(name.clone()) {
                n += 1;
                name = format!("{base}-{n}");
            }
            memory.name = name;
            memory
        })
        .collect()
}
// ANCHOR_END: fallback

// ANCHOR: replace
/// Replaces the store's `old` memories with `new` ones. New files are
/// written first and old ones removed after, so a crash half-way leaves
/// duplicates (which the next consolidation merges), never a loss. A memory
/// that comes back exactly as it was is not written again, so its file
/// keeps its date.
pub fn replace_all(store: &MemoryStore, old: &[StoredMemory], new: &[Memory]) -> io::Result<()> {
    let mut kept = HashSet::new();
    for memory in new {
        let as_written = Memory::new(&memory.name, memory.kind, &memory.description, &memory.body);
        let unchanged = old
            .iter()
            .any(|stored| stored.file == as_written.file_name() && stored.memory == as_written);
        if unchanged {
            kept.insert(as_written.file_name());
        } else {
            kept.insert(store.write_file(memory)?.file);
        }
    }
    for stored in old {
        if !kept.contains(&stored.file) {
            store.remove_file(&stored.file)?;
        }
    }
    store.rebuild_index()
}
// ANCHOR_END: replace

// ANCHOR: consolidate
/// Who did the merging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merger {
    SideQuery,
    /// The side query failed for this reason.
    Deterministic(String),
}

/// What consolidation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consolidated {
    pub before: usize,
    pub after: usize,
    pub merger: Merger,
}

/// Consolidates the store if it holds [`CONSOLIDATE_THRESHOLD`] memories
/// or more; returns `None` if it holds fewer.
pub async fn consolidate_if_due(
    side: &SideQuery,
    store: &MemoryStore,
) -> io::Result<Option<Consolidated>> {
    let memories = oldest_first(store.list());
    if memories.len() < CONSOLIDATE_THRESHOLD {
        return Ok(None);
    }
    let answer = side
        .ask(&consolidation_prompt(&memories), CONSOLIDATE_MAX_TOKENS)
        .await
        .map_err(ConsolidateError::from)
        .and_then(|text| parse_consolidated(&text, memories.len()));
    let (new, merger) = match answer {
        Ok(new) => (new, Merger::SideQuery),
        Err(reason) => (
            deterministic_merge(&memories),
            Merger::Deterministic(reason.to_string()),
        ),
    };
    replace_all(store, &memories, &new)?;
    Ok(Some(Consolidated {
        before: memories.len(),
        after: store.count(),
        merger,
    }))
}
// ANCHOR_END: consolidate
