//! The system prompt, assembled from sections.
//!
//! Before every model call the hooks describe the prompt as a list of
//! [`Section`]s, each keyed by its topic (`identity`, `workspace`, `tools`,
//! …) and written from the agent's state at that moment: the tools the
//! model is offered, the workspace path, the skill catalog, the memory
//! index on disk. A section with nothing to say is left out. The
//! [`PromptAssembler`] then
//!
//! 1. hashes the sections into a [`PromptKey`];
//! 2. returns the prompt it built last time if the key is the same
//!    (`[cache hit]`), or assembles a new one (`[assembled] sections: …`);
//! 3. marks the end of the stable prefix with a cache breakpoint, so the
//!    provider can reuse the work it did on those bytes last time.
//!
//! Adding a section is one line where the hooks list them (see
//! `LessonHooks::prompt_sections` in `hooks.rs`), as the skill catalog's is:
//!
//! ```text
//! Section::new("skills", self.skill_catalog.clone().unwrap_or_default()),
//! ```
//!
//! Start reading at [`section`], then [`assemble`](mod@assemble), then
//! [`sources`], the sections this lesson builds from its state.
//! [`breakpoints`] marks the conversation for the cache as each request
//! goes out, and [`usage`] logs what the provider says it did with the
//! cached prefix.

pub mod assemble;
pub mod breakpoints;
pub mod section;
pub mod sources;
pub mod usage;

pub use assemble::{Outcome, PromptAssembler, Stats, assemble, mark_last_tool};
pub use breakpoints::{ConversationBreakpoints, mark_conversation};
pub use section::{Placement, PromptKey, Section};
pub use usage::log_cache_usage;
