//! Turning sections into system blocks, once per change.

use shared::notice::Notices;
use shared::protocol::{CacheControl, SystemBlock, ToolSpec};

use super::section::{Placement, PromptKey, Section};

/// What separates two sections in one block: a blank line, as between
/// paragraphs.
const SEPARATOR: &str = "\n\n";

// ANCHOR: assemble
/// Builds the system blocks from the present sections, in their order: the
/// stable ones joined into one block that carries the cache breakpoint,
/// then the volatile ones, if any, in a second block after it.
pub fn assemble(sections: &[Section]) -> Vec<SystemBlock> {
    // ANCHOR: exercise-s10-assemble
    let joined = |placement: Placement| {
        let texts: Vec<&str> = sections
            .iter()
            .filter(|section| section.placement == placement && section.is_present())
            .map(|section| section.text.as_str())
            .collect();
        texts.join(SEPARATOR)
    };
    let mut blocks = Vec::new();
    let stable = joined(Placement::Stable);
    if !stable.is_empty() {
        blocks.push(SystemBlock {
            cache_control: Some(CacheControl::ephemeral()),
            ..SystemBlock::text(stable)
        });
    }
    let volatile = joined(Placement::Volatile);
    if !volatile.is_empty() {
        blocks.push(SystemBlock::text(volatile));
    }
    blocks
    // ANCHOR_END: exercise-s10-assemble
}

/// Puts a cache breakpoint on the last tool. Tools come first in the
/// prefix the provider caches (tools, then system, then messages), so this
/// keeps the tool list cached even when a system section changes.
pub fn mark_last_tool(tools: &mut [ToolSpec]) {
    if let Some(last) = tools.last_mut() {
        last.cache_control = Some(CacheControl::ephemeral());
    }
}
// ANCHOR_END: assemble

/// What [`PromptAssembler::get`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The key was new: the prompt was built from these topics.
    Assembled { key: PromptKey, topics: Vec<String> },
    /// The key matched the last one: the stored prompt was reused.
    CacheHit { key: PromptKey },
}

impl Outcome {
    /// The notice the terminal shows, after `[prompt]`.
    pub fn line(&self) -> String {
        match self {
            Self::Assembled { topics, .. } => {
                format!("assembled from sections: {}", topics.join(", "))
            }
            Self::CacheHit { .. } => "cache hit: system prompt unchanged".to_string(),
        }
    }
}

/// How often the assembler built a prompt and how often it reused one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub assembled: usize,
    pub hits: usize,
}

// ANCHOR: assembler
/// Assembles the system prompt and keeps the last one, keyed by its inputs.
#[derive(Debug, Default)]
pub struct PromptAssembler {
    last: Option<(PromptKey, Vec<SystemBlock>)>,
    stats: Stats,
    notices: Notices,
}

impl PromptAssembler {
    /// An assembler that has built nothing yet, reporting each outcome to
    /// `notices`.
    pub fn new(notices: Notices) -> Self {
        Self {
            notices,
            ..Self::default()
        }
    }

    /// The system blocks for `sections`, reusing the last ones if nothing
    /// changed, and a report of which it was.
    pub fn get(&mut self, sections: &[Section]) -> (Vec<SystemBlock>, Outcome) {
        let key = PromptKey::of(sections);
        if let Some((last_key, blocks)) = &self.last
            && *last_key == key
        {
            self.stats.hits += 1;
            return (blocks.clone(), Outcome::CacheHit { key });
        }
        let blocks = assemble(sections);
        let topics = sections
            .iter()
            .filter(|section| section.is_present())
            .map(|section| section.topic.clone())
            .collect();
        self.last = Some((key, blocks.clone()));
        self.stats.assembled += 1;
        (blocks, Outcome::Assembled { key, topics })
    }

    /// Like [`get`](Self::get), reporting the outcome as a notice.
    pub fn build(&mut self, sections: &[Section]) -> Vec<SystemBlock> {
        let (blocks, outcome) = self.get(sections);
        let key = match &outcome {
            Outcome::Assembled { key, .. } | Outcome::CacheHit { key } => key,
        };
        tracing::debug!("system prompt key {key}");
        self.notices.emit(PROMPT_TAG, outcome.line());
        blocks
    }
}
// ANCHOR_END: assembler

impl PromptAssembler {
    /// The key of the prompt built last, if any.
    pub fn key(&self) -> Option<PromptKey> {
        self.last.as_ref().map(|(key, _)| *key)
    }

    /// How many prompts were built and how many reused so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

/// The tag of the assembler's notices.
pub const PROMPT_TAG: &str = "prompt";
