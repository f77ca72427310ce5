//! The five base tools every lesson from chapter 2 on gives the model:
//! `bash`, `read_file`, `write_file`, `edit_file` and `glob`.
//!
//! Each tool has its own module with a `spec()` (what the model is told) and
//! a `call()` that takes the model's raw JSON input and returns a
//! [`ToolOutput`]. Bad input and failures are `is_error` outputs that say
//! what went wrong; no tool panics. Every path goes through [`Workspace`],
//! which refuses to leave the workspace directory.
//!
//! Which tools a lesson offers, and how it routes a call to one, is the
//! lesson's business: chapter 2 builds the dispatch map.

pub mod bash;
pub mod edit_file;
mod files;
pub mod glob;
pub mod input;
pub mod read_file;
pub mod workspace;
pub mod write_file;

pub use crate::hooks::ToolOutput;
pub use files::MAX_FILE_BYTES;
pub use workspace::{PathError, Workspace};

use crate::protocol::ToolSpec;

/// The longest text any base tool hands back, in characters. Longer output
/// is cut with a note saying how much is missing.
pub const MAX_OUTPUT_CHARS: usize = 50_000;

/// The specs of the five base tools, in the order the course lists them.
pub fn base_specs() -> Vec<ToolSpec> {
    vec![
        bash::spec(),
        read_file::spec(),
        write_file::spec(),
        edit_file::spec(),
        glob::spec(),
    ]
}

/// `1 line`, `3 lines`: counts in messages the model reads.
pub(crate) fn plural(count: usize, noun: &str) -> String {
    let ending = match (count, noun.ends_with("ch")) {
        (1, _) => "",
        (_, true) => "es",
        _ => "s",
    };
    format!("{count} {noun}{ending}")
}
