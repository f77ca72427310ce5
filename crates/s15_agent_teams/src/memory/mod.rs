//! The memory layer: knowledge that outlives the conversation.
//!
//! Compaction (lesson 8) keeps a session going by summarising it, and a
//! summary loses details; a new session starts with nothing at all. This
//! module keeps a layer that neither touches: `.memory/` in the workspace.
//!
//! * [`file`](mod@file): one memory as a Markdown file with a small frontmatter,
//!   its name slugged so that no path escapes the directory; the
//!   frontmatter is YAML ([`frontmatter`]) and dates the memory
//!   ([`timestamp`]).
//! * [`store`]: the directory, written atomically and read defensively.
//! * [`index`]: `MEMORY.md`, one line per memory, rebuilt on every write
//!   and put in the system prompt of every request.
//! * [`recall`]: at the start of each turn, a side query picks up to five
//!   memories relevant to the prompt, read with the conversation before it
//!   (keywords if it fails), whose bodies join the prompt's message in a
//!   `<memories>` block.
//! * [`extract`]: when the turn ends, a side query pulls durable facts out
//!   of the dialogue; new ones are written, known ones are not.
//! * [`consolidate`]: at ten files, a side query merges and prunes the
//!   store, oldest memories first, the newer statement winning (a lossless
//!   deterministic merge if it fails).
//! * [`error`]: why an answer of those side queries was not used.
//!
//! [`MemorySystem`] ties them to the lesson's hooks.

pub mod consolidate;
pub mod error;
pub mod extract;
pub mod file;
pub mod frontmatter;
pub mod index;
pub mod recall;
pub mod report;
pub mod side_query;
pub mod store;
pub mod timestamp;

use std::fs;

use shared::cli::Setup;
use shared::history::push_user;
use shared::notice::Notices;
use shared::protocol::{ContentBlock, Message, Role, SystemBlock};
use shared::text::plural;

pub use file::{Memory, MemoryType, StoredMemory};
use recall::Source;
use side_query::SideQuery;
pub use store::MemoryStore;
pub use timestamp::{Clock, Timestamp};

// ANCHOR: system
/// The memory layer of one agent: its store, and the model it asks its
/// side queries.
pub struct MemorySystem {
    store: MemoryStore,
    side: SideQuery,
    /// The prompt of the turn that has not had its recall yet.
    pending_prompt: Option<String>,
    /// Where it reports what it recalled, extracted and skipped.
    notices: Notices,
}

impl MemorySystem {
    /// The memory layer of the setup's workspace, asking the setup's model
    /// its side queries and reporting to its notices. If `.memory/` exists,
    /// its index is brought in line with the files (someone may have edited
    /// them by hand), and malformed files are reported now.
    pub fn new(setup: &Setup) -> Self {
        let notices = setup.notices().clone();
        let store = MemoryStore::in_workspace(setup.workspace()).with_notices(notices.clone());
        let system = Self {
            store,
            side: SideQuery::new(setup.model().clone(), setup.model_id().to_owned()),
            pending_prompt: None,
            notices,
        };
        if system.store.dir().is_dir() {
            let expected = index::render(&system.store.list());
            let current = fs::read_to_string(system.store.dir().join(index::INDEX_FILE)).ok();
            if current.as_deref() != Some(expected.as_str())
                && let Err(error) = system.store.rebuild_index()
            {
                system.warn(&format!("could not rebuild the memory index: {error}"));
            }
        }
        system
    }

    fn note(&self, text: &str) {
        report::note(&self.notices, text);
    }

    fn warn(&self, text: &str) {
        report::warn(&self.notices, text);
    }

    /// The store.
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// The system prompt section listing the memories (read from
    /// `MEMORY.md` now), or `None` while the store is empty.
    pub fn system_section(&self) -> Option<String> {
        index::system_section(self.store.dir())
    }

    /// [`Self::system_section`] as a system prompt block of its own.
    pub fn system_block(&self) -> Option<SystemBlock> {
        self.system_section().map(SystemBlock::text)
    }
}
// ANCHOR_END: system

// ANCHOR: hooks
impl MemorySystem {
    /// `on_user_prompt`: remembers the prompt, so that the first model call
    /// of the turn recalls memories for it.
    pub fn note_prompt(&mut self, prompt: &str) {
        self.pending_prompt = Some(prompt.to_string());
    }

    /// `before_model_call`: on the first call of a turn, chooses the
    /// memories relevant to the prompt, read with the conversation before
    /// it, and appends them, as one
    /// `<memories>` text block, to the message that holds the prompt — the
    /// last message, and after anything it already holds, so any
    /// `tool_result` blocks there stay first. Later calls of the turn do
    /// nothing.
    pub async fn recall_for_turn(&mut self, history: &mut Vec<Message>) {
        let Some(prompt) = self.pending_prompt.take() else {
            return;
        };
        if history.last().map(|message| message.role) != Some(Role::User) {
            return;
        }
        let conversation = recall::conversation_before_prompt(history);
        let Some(recalled) = recall::recall(&self.side, &self.store, &prompt, &conversation).await
        else {
            return;
        };
        let names: Vec<&str> = recalled
            .memories
            .iter()
            .map(|stored| stored.memory.name.as_str())
            .collect();
        match &recalled.source {
            Source::SideQuery if names.is_empty() => {}
            Source::SideQuery => self.note(&format!("recalled {}", names.join(", "))),
            Source::Keywords(reason) => {
                self.warn(&format!(
                    "memory recall side query failed ({reason}); matching keywords instead"
                ));
                self.note(&format!(
                    "recalled by keywords: {}",
                    if names.is_empty() {
                        "nothing".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            }
        }
        if !recalled.memories.is_empty() {
            let block = recall::render_block(&recalled.memories);
            push_user(history, vec![ContentBlock::text(block)]);
        }
    }

    /// `on_stop`: extracts new memories from the end of the turn, then
    /// consolidates the store if a new file brought it to the threshold.
    /// Failures are reported and change nothing; the turn still ends.
    pub async fn after_turn(&mut self, history: &[Message]) {
        let extracted = match extract::extract(&self.side, &self.store, history).await {
            Ok(extracted) => extracted,
            Err(error) => {
                self.warn(&format!("no memories extracted: {error}"));
                return;
            }
        };
        for reason in &extracted.refused {
            self.warn(&format!(
                "extraction proposed an invalid memory ({reason}); skipped"
            ));
        }
        if !extracted.created.is_empty() {
            self.note(&format!(
                "extracted {}: {}",
                plural(extracted.created.len(), "new memory", "new memories"),
                extracted.created.join(", ")
            ));
        }
        if !extracted.updated.is_empty() {
            self.note(&format!("updated {}", extracted.updated.join(", ")));
        }
        if extracted.created.is_empty() {
            return;
        }
        match consolidate::consolidate_if_due(&self.side, &self.store).await {
            Ok(None) => {}
            Ok(Some(done)) => {
                if let consolidate::Merger::Deterministic(reason) = &done.merger {
                    self.warn(&format!(
                        "memory consolidation side query failed ({reason}); merged deterministically instead"
                    ));
                }
                self.note(&format!(
                    "consolidated {} into {}",
                    plural(done.before, "memory", "memories"),
                    done.after
                ));
            }
            Err(error) => self.warn(&format!("memory consolidation failed: {error}")),
        }
    }
}
// ANCHOR_END: hooks
