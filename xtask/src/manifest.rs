//! What the checks need from a lesson's `Cargo.toml`, read line by line
//! (no TOML parser): the package `description`, and the names of the
//! dependencies in `[dependencies]` and `[dev-dependencies]`.
//!
//! A dependency is a line `name.workspace = true`, `name = "1"` or
//! `name = { … }` in one of those sections, or a table
//! `[dependencies.name]`. Comments, blank lines and every other section are
//! skipped; the course's manifests use nothing fancier.

use std::collections::{BTreeMap, BTreeSet};

/// The dependency sections the checks read.
pub const SECTIONS: [&str; 2] = ["dependencies", "dev-dependencies"];

/// What one manifest says.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The `description` of `[package]`: its 1-based line and its value
    /// (the text between the quotes of a basic string, else the raw value).
    pub description: Option<(usize, String)>,
    /// Dependency name → the sections (of [`SECTIONS`]) that list it.
    pub dependencies: BTreeMap<String, BTreeSet<&'static str>>,
}

impl Manifest {
    /// Reads the text of a `Cargo.toml`.
    pub fn parse(text: &str) -> Manifest {
        let mut out = Manifest::default();
        let mut section = String::new();
        for (index, line) in text.lines().enumerate() {
            let line = strip_comment(line).trim();
            if line.is_empty() {
                continue;
            }
            if let Some(header) = line.strip_prefix('[') {
                section = header.trim_end_matches(']').trim().to_string();
                // `[dependencies.name]`: a dependency written as a table.
                if let Some((table, name)) = section.split_once('.')
                    && let Some(known) = SECTIONS.iter().find(|s| **s == table.trim())
                {
                    out.dependencies
                        .entry(unquote(name.trim()).to_string())
                        .or_default()
                        .insert(known);
                }
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let key = key.trim();
            if section == "package" && key == "description" {
                out.description = Some((index + 1, string_value(value.trim())));
            } else if let Some(known) = SECTIONS.iter().find(|s| **s == section) {
                // `name.workspace`, `name.version`, `name`.
                let name = key.split('.').next().unwrap_or(key).trim();
                if !name.is_empty() {
                    out.dependencies
                        .entry(unquote(name).to_string())
                        .or_default()
                        .insert(known);
                }
            }
        }
        out
    }

    /// The sections that list `name`, if any.
    pub fn sections_of(&self, name: &str) -> Option<&BTreeSet<&'static str>> {
        self.dependencies.get(name)
    }
}

/// The line without a `#` comment (a `#` inside a basic string stays).
fn strip_comment(line: &str) -> &str {
    let mut in_string = false;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '#' if !in_string => return &line[..at],
            _ => {}
        }
    }
    line
}

fn unquote(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

/// The value of a basic string (`"…"`, with `\"` and `\\` read), or the
/// raw text when it is not one.
fn string_value(raw: &str) -> String {
    let Some(inner) = raw.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return raw.to_string();
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_descriptions_and_every_way_to_write_a_dependency() {
        let manifest = Manifest::parse(
            r#"[package]
name = "s02_x"
description = "Lesson 2: a \"quoted\" # word" # a comment

[lib]
test = false

[dependencies]
anyhow.workspace = true
clap = { workspace = true, features = ["derive"] }
"serde" = "1" # quoted key
# tracing.workspace = true

[dev-dependencies]
shared = { workspace = true, features = ["testing"] }
anyhow.workspace = true

[dev-dependencies.insta]
workspace = true

[lints]
workspace = true
"#,
        );
        assert_eq!(
            manifest.description,
            Some((3, "Lesson 2: a \"quoted\" # word".to_string()))
        );
        let listed: Vec<(&str, Vec<&str>)> = manifest
            .dependencies
            .iter()
            .map(|(name, sections)| (name.as_str(), sections.iter().copied().collect()))
            .collect();
        assert_eq!(
            listed,
            [
                ("anyhow", vec!["dependencies", "dev-dependencies"]),
                ("clap", vec!["dependencies"]),
                ("insta", vec!["dev-dependencies"]),
                ("serde", vec!["dependencies"]),
                ("shared", vec!["dev-dependencies"]),
            ]
        );
        assert_eq!(
            Manifest::parse("[package]\nname = \"x\"\n").description,
            None
        );
    }
}
