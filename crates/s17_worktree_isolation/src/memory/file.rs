//! One memory file: what it holds, how its name becomes a file name, and
//! how it is written and read.
//!
//! A memory file is a small YAML frontmatter block followed by the body:
//!
//! ```text
//! ---
//! name: user-prefers-tabs
//! description: User prefers tabs over spaces for indentation
//! type: user
//! updated: 2025-03-14T09:26:53Z
//! ---
//!
//! Indent with tabs, never spaces, in every file.
//! ```
//!
//! [`frontmatter`] reads and writes the block; this
//! module says what the fields mean. `updated` is when the harness last
//! wrote the file; a file without it (written by hand, or before memories
//! were dated) still loads, and counts as older than every dated one.

use std::fmt;

pub use super::frontmatter::ParseError;
use super::frontmatter::{self, Fields};
use super::timestamp::Timestamp;

/// The store's directory, relative to the workspace.
pub const MEMORY_DIR: &str = ".memory";

/// The index file, inside the store's directory.
pub const INDEX_FILE: &str = "MEMORY.md";

/// The longest slug a memory name becomes (the file name adds `.md`).
pub const MAX_SLUG_CHARS: usize = 64;

// ANCHOR: types
/// What kind of knowledge a memory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryType {
    /// Who the user is and what they prefer ("tabs, not spaces").
    User,
    /// How the user wants the agent to work ("don't mock the database").
    Feedback,
    /// What is going on in the project ("the auth rewrite is for compliance").
    Project,
    /// Where to find things ("pipeline bugs are tracked in INGEST").
    Reference,
}

impl MemoryType {
    /// The names written in the `type:` field.
    pub const NAMES: [&'static str; 4] = ["user", "feedback", "project", "reference"];

    /// Reads a `type:` value; case and surrounding spaces do not matter.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "user" => Some(Self::User),
            "feedback" => Some(Self::Feedback),
            "project" => Some(Self::Project),
            "reference" => Some(Self::Reference),
            _ => None,
        }
    }

    /// The name written in the `type:` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Feedback => "feedback",
            Self::Project => "project",
            Self::Reference => "reference",
        }
    }
}

impl fmt::Display for MemoryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One memory: the three frontmatter fields and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub name: String,
    pub description: String,
    pub kind: MemoryType,
    pub body: String,
}

/// A memory as found on disk, with the file it came from (`name.md`,
/// relative to the store's directory) and when that file was last written
/// (`None` if it does not say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMemory {
    pub file: String,
    pub memory: Memory,
    pub updated: Option<Timestamp>,
}
// ANCHOR_END: types

impl StoredMemory {
    /// The memory as one line of a side query's catalogue:
    /// `- name (type): description`.
    pub fn catalogue_line(&self) -> String {
        format!(
            "- {} ({}): {}",
            self.memory.name,
            self.memory.kind,
            one_line(&self.memory.description)
        )
    }
}

// ANCHOR: slug
/// Turns any name into a safe file stem: lowercase ASCII letters, digits
/// and single dashes, at most [`MAX_SLUG_CHARS`] long.
///
/// Every other character — `/`, `\`, `.`, spaces, accents, any non-ASCII
/// letter — becomes a dash, and dashes never lead or trail, so no slug can
/// be `..`, hold a separator or start with a dot: a memory file can only
/// ever land directly inside `.memory/`. A name with nothing usable left
/// (empty, `..`, `日本語`) gets a stable `memory-<hash>` slug, so different
/// such names still get different files. `memory` itself is renamed,
/// because `memory.md` and `MEMORY.md` are one file on case-insensitive
/// file systems.
pub fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if slug.len() == MAX_SLUG_CHARS {
                break;
            }
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            if slug.len() + 1 >= MAX_SLUG_CHARS {
                break;
            }
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        format!("memory-{:08x}", fnv1a(name))
    } else if slug == "memory" {
        "memory-note".to_string()
    } else {
        slug
    }
}

/// A small stable hash (FNV-1a, 32 bits). The standard library's hasher
/// may change between Rust releases; a file name must not.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}
// ANCHOR_END: slug

/// Puts a value on one line: the harness writes no multi-line values.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ANCHOR: format
impl Memory {
    /// A memory whose name is already a slug and whose description is one
    /// line, ready to be written.
    pub fn new(name: &str, kind: MemoryType, description: &str, body: &str) -> Self {
        Self {
            name: slug(name),
            description: one_line(description),
            kind,
            body: body.trim().to_string(),
        }
    }

    /// The file this memory is stored in.
    pub fn file_name(&self) -> String {
        format!("{}.md", slug(&self.name))
    }

    /// The file's contents, dated `updated`.
    pub fn to_markdown(&self, updated: Timestamp) -> String {
        let front = frontmatter::write(&[
            ("name", &one_line(&self.name)),
            ("description", &one_line(&self.description)),
            ("type", self.kind.as_str()),
            ("updated", &updated.to_string()),
        ]);
        format!("---\n{front}---\n\n{}\n", self.body.trim())
    }

    /// Reads a memory file's contents: the memory, and when it was written
    /// (`None` when the file has no `updated` field, or one that is not a
    /// time: such a file is read all the same).
    pub fn parse(text: &str) -> Result<(Self, Option<Timestamp>), ParseError> {
        let (yaml, body) = frontmatter::split(text)?;
        let Fields {
            name,
            description,
            kind,
            updated,
        } = frontmatter::read(yaml)?;
        let required = |field: Option<String>, key| match field {
            Some(value) if !value.trim().is_empty() => Ok(value),
            _ => Err(ParseError::Missing(key)),
        };
        let kind = required(kind, "type")?;
        let kind = MemoryType::parse(&kind).ok_or(ParseError::UnknownType(kind))?;
        let memory = Self {
            name: required(name, "name")?,
            // A description written over several lines is one line here,
            // as in the index.
            description: one_line(&required(description, "description")?),
            kind,
            // `lines` drops the `\r` of Windows line endings.
            body: body
                .lines()
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string(),
        };
        let updated = updated.as_deref().and_then(Timestamp::parse);
        Ok((memory, updated))
    }
}
// ANCHOR_END: format
