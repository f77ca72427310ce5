//! One memory file: what it holds, how its name becomes a file name, and
//! how it is written and read.
//!
//! A memory file is a small frontmatter block followed by the body:
//!
//! ```text
//! ---
//! name: user-prefers-tabs
//! description: User prefers tabs over spaces for indentation
//! type: user
//! ---
//!
//! Indent with tabs, never spaces, in every file.
//! ```
//!
//! The frontmatter is our own format, always one `key: value` per line, so
//! it is parsed by hand rather than with a YAML library (see the chapter).

use std::fmt;

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
/// relative to the store's directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMemory {
    pub file: String,
    pub memory: Memory,
}
// ANCHOR_END: types

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

/// Puts a value on one line: the frontmatter has no multi-line values.
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

    /// The file's contents.
    pub fn to_markdown(&self) -> String {
        format!(
            "---\nname: {}\ndescription: {}\ntype: {}\n---\n\n{}\n",
            one_line(&self.name),
            one_line(&self.description),
            self.kind,
            self.body.trim()
        )
    }

    /// Reads a memory file's contents.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, first)) if first.trim_end() == "---" => {}
            _ => return Err(ParseError::NoFrontmatter),
        }
        let (mut name, mut description, mut kind) = (None, None, None);
        let mut closed = false;
        for (number, line) in lines.by_ref() {
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(ParseError::NotKeyValue(number + 1));
            };
            let value = unquote(value.trim()).to_string();
            match key.trim() {
                "name" => name = Some(value),
                "description" => description = Some(value),
                "type" => {
                    kind = Some(MemoryType::parse(&value).ok_or(ParseError::UnknownType(value))?)
                }
                // Other keys (a hand-written `tags:`, say) are ignored.
                _ => {}
            }
        }
        if !closed {
            return Err(ParseError::Unclosed);
        }
        let body: Vec<&str> = lines.map(|(_, line)| line).collect();
        let required = |field: Option<String>, key| match field {
            Some(value) if !value.is_empty() => Ok(value),
            _ => Err(ParseError::Missing(key)),
        };
        Ok(Self {
            name: required(name, "name")?,
            description: required(description, "description")?,
            kind: kind.ok_or(ParseError::Missing("type"))?,
            body: body.join("\n").trim().to_string(),
        })
    }
}

/// `"text"` or `'text'` → `text`: hand-written files may quote values.
fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// Why a memory file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("it does not start with a `---` frontmatter line")]
    NoFrontmatter,
    #[error("its frontmatter has no closing `---` line")]
    Unclosed,
    #[error("line {0} of its frontmatter is not `key: value`")]
    NotKeyValue(usize),
    #[error("its frontmatter has no `{0}`")]
    Missing(&'static str),
    #[error("unknown type {0:?} (use one of user, feedback, project, reference)")]
    UnknownType(String),
}
// ANCHOR_END: format
