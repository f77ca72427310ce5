//! The fork's side of an exercise: the tool behind `cargo grade`, `cargo
//! hint`, `cargo solution` and `cargo reset`, and the data it reads.
//!
//! The tool is a crate of the fork (`exercise/`), with no dependency but
//! the standard library, so it adds nothing to the fork's lock and builds
//! offline anywhere the lesson does. Its source is
//! `xtask/exercise_tool/main.rs`, copied in as it is; what it needs to know
//! about the lesson is written beside it in `exercise/exercise.txt`, one
//! tab-separated record a line (a format the tool parses in a few lines,
//! where TOML would need a dependency).

use std::path::Path;

use anyhow::{Context, Result};

/// The tool's folder in the fork, relative to its root.
pub const DIR: &str = "exercise";

/// The tool's source.
const MAIN_RS: &str = include_str!("../../exercise_tool/main.rs");

/// The tool's manifest: std only.
const CARGO_TOML: &str = r#"# `cargo grade`, `cargo hint`, `cargo solution`, `cargo reset`: see
# .cargo/config.toml and README.md. Written by `cargo xtask fork --exercise`.
[package]
name = "exercise"
version = "0.1.0"
edition = "2024"
publish = false

[[bin]]
name = "exercise"
path = "main.rs"
"#;

/// The Cargo aliases the student types.
const CONFIG_TOML: &str = r#"# The exercise's commands (the tool is exercise/main.rs).
[alias]
grade = "run --quiet --package exercise -- grade"
hint = "run --quiet --package exercise -- hint"
solution = "run --quiet --package exercise -- solution"
reset = "run --quiet --package exercise -- reset"
"#;

/// What the tool knows about the exercise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Data {
    /// `s03`.
    pub lesson: String,
    /// The lesson's package name in the fork.
    pub package: String,
    /// The graded `tests/it` modules.
    pub graded: Vec<String>,
    /// Every file under the lesson's `tests/`, fork-relative, with its
    /// FNV-1a hash.
    pub hashes: Vec<(String, u64)>,
    /// The regions, in order.
    pub regions: Vec<RegionData>,
}

/// One region, as the tool needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionData {
    pub name: String,
    pub anchor: String,
    /// Fork-relative.
    pub file: String,
    pub todo: String,
    pub hints: Vec<String>,
}

impl Data {
    /// The `exercise.txt` text.
    pub fn render(&self) -> String {
        let clean = |text: &str| text.replace(['\t', '\n', '\r'], " ");
        let mut out =
            String::from("# Written by `cargo xtask fork --exercise`; read by exercise/main.rs.\n");
        out.push_str(&format!("lesson\t{}\n", self.lesson));
        out.push_str(&format!("package\t{}\n", self.package));
        for module in &self.graded {
            out.push_str(&format!("graded\t{module}\n"));
        }
        for (file, hash) in &self.hashes {
            out.push_str(&format!("hash\t{file}\t{hash:016x}\n"));
        }
        for region in &self.regions {
            out.push_str(&format!(
                "region\t{}\t{}\t{}\n",
                region.name, region.anchor, region.file
            ));
            out.push_str(&format!("todo\t{}\n", clean(&region.todo)));
            for hint in &region.hints {
                out.push_str(&format!("hint\t{}\n", clean(hint)));
            }
        }
        out
    }
}

/// FNV-1a, 64 bits: the tool computes the same in a few lines. It tells
/// an edited test file from the forked one; it is no defence against
/// someone who means to cheat (nothing in the fork could be).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Writes `text` to `path`, creating its folder.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes the tool's crate and the aliases into the fork at `dest`.
pub fn write_crate(dest: &Path) -> Result<()> {
    write_text(&dest.join(DIR).join("Cargo.toml"), CARGO_TOML)?;
    write_text(&dest.join(DIR).join("main.rs"), MAIN_RS)?;
    write_text(&dest.join(".cargo/config.toml"), CONFIG_TOML)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
