//! Why an answer about memories was not used.
//!
//! Extraction and consolidation both ask a side query for memories as a
//! JSON array. Extraction skips an item that is not a memory and reports
//! it ([`InvalidMemory`]), and gives up only on an answer with no array
//! ([`NoJsonArray`]); consolidation replaces the whole store, so any
//! flaw refuses the whole answer ([`ConsolidateError`]) and the
//! deterministic merge runs instead. Each message is the text the notice
//! shows.

use super::file::MemoryType;
use super::side_query::SideQueryError;

/// Why one item of an answer is not a memory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidMemory {
    /// The item is not a JSON object (the start of it is kept).
    #[error("not an object: {0}")]
    NotAnObject(String),
    /// The object has no `name`.
    #[error("no name")]
    NoName,
    /// The `type` is missing or not one of the four.
    #[error("{name}: type must be one of {}", MemoryType::NAMES.join(", "))]
    UnknownType { name: String },
    /// Neither a `description` nor a `body`.
    #[error("{name}: no description and no body")]
    NoContent { name: String },
}

/// An extraction answer that holds no JSON array (the start of it is
/// kept).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the answer holds no JSON array: {0:?}")]
pub struct NoJsonArray(pub String);

/// Why a consolidation answer was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConsolidateError {
    /// The side query itself failed.
    #[error(transparent)]
    SideQuery(#[from] SideQueryError),
    /// No JSON array in the answer.
    #[error("the answer holds no JSON array")]
    NoJsonArray,
    /// An empty list, which would delete every memory.
    #[error("the answer is an empty list, which would delete every memory")]
    Empty,
    /// More memories than it was given: consolidation only shrinks.
    #[error("the answer has {found} memories, more than the {before} it was given")]
    TooMany { found: usize, before: usize },
    /// One item is not a memory.
    #[error(transparent)]
    Invalid(#[from] InvalidMemory),
    /// Two memories with the same name (slugged).
    #[error("the answer names {0} twice")]
    DuplicateName(String),
}
