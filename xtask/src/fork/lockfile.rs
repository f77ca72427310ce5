//! Trimming the workspace's `Cargo.lock` to what a fork uses.
//!
//! The fork must build with the very versions the course was tested with,
//! so it gets the course's lock file rather than a fresh resolution. Cargo
//! accepts a lock file under `--locked` only if it would write the same
//! bytes itself, so the trimmed file follows Cargo's own rules:
//!
//! - the packages kept are those reachable from the fork's members through
//!   the `dependencies` lists;
//! - packages are sorted by name (a renamed lesson moves to its new place),
//!   several versions of one name staying in the order Cargo gave them;
//! - a dependency is written `"name"` when the lock has one package of that
//!   name, `"name version"` when that is enough to tell them apart, and
//!   `"name version (source)"` otherwise, so trimming away the second
//!   version of a crate shortens the entries that named it.

use std::collections::{BTreeSet, HashMap};

use anyhow::{Context, Result, bail};
use toml_edit::{DocumentMut, Item, Table};

/// One `[[package]]` entry.
#[derive(Debug, Clone)]
struct Package {
    name: String,
    version: String,
    source: Option<String>,
    checksum: Option<String>,
    dependencies: Vec<String>,
}

impl Package {
    fn read(table: &Table) -> Result<Package> {
        let text = |key: &str| table.get(key).and_then(Item::as_str).map(str::to_string);
        let dependencies = match table.get("dependencies") {
            None => Vec::new(),
            Some(item) => item
                .as_array()
                .context("a package's dependencies are not a list")?
                .iter()
                .map(|dep| dep.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .context("a dependency that is not a string")?,
        };
        Ok(Package {
            name: text("name").context("a package without a name")?,
            version: text("version").context("a package without a version")?,
            source: text("source"),
            checksum: text("checksum"),
            dependencies,
        })
    }

    /// Whether the dependency entry `name [version [(source)]]` means this
    /// package.
    fn is(&self, entry: &str) -> bool {
        let mut parts = entry.splitn(3, ' ');
        parts.next() == Some(self.name.as_str())
            && parts.next().is_none_or(|version| version == self.version)
            && parts.next().is_none_or(|source| {
                source.strip_prefix('(').and_then(|s| s.strip_suffix(')')) == self.source.as_deref()
            })
    }
}

/// The lock file `lock` keeps for a project whose members are `members`
/// (their names in the lock), with each `(old, new)` of `renames` applied.
pub fn trim(lock: &str, members: &[&str], renames: &[(&str, &str)]) -> Result<String> {
    let doc: DocumentMut = lock.parse().context("parsing Cargo.lock")?;
    let Some(version) = doc.get("version").and_then(Item::as_integer) else {
        bail!("Cargo.lock has no format version");
    };
    if version != 4 {
        bail!("Cargo.lock is format version {version}; this task writes version 4");
    }
    let packages: Vec<Package> = doc
        .get("package")
        .and_then(Item::as_array_of_tables)
        .context("Cargo.lock lists no packages")?
        .iter()
        .map(Package::read)
        .collect::<Result<_>>()?;

    // Each entry of each `dependencies` list, as the package it names.
    let edges: Vec<Vec<usize>> = packages
        .iter()
        .map(|package| {
            package
                .dependencies
                .iter()
                .map(|entry| {
                    packages.iter().position(|p| p.is(entry)).with_context(|| {
                        format!("Cargo.lock names {entry:?}, which it does not list")
                    })
                })
                .collect()
        })
        .collect::<Result<_>>()?;

    // Walk the graph from the members (which have no source).
    let mut keep = BTreeSet::new();
    let mut pending: Vec<usize> = Vec::new();
    for member in members {
        let Some(at) = packages
            .iter()
            .position(|p| p.name == *member && p.source.is_none())
        else {
            bail!("Cargo.lock has no workspace member {member}");
        };
        pending.push(at);
    }
    while let Some(at) = pending.pop() {
        if keep.insert(at) {
            pending.extend(&edges[at]);
        }
    }

    let names: Vec<&str> = packages
        .iter()
        .map(|package| {
            renames
                .iter()
                .find(|(old, _)| *old == package.name)
                .map_or(package.name.as_str(), |(_, new)| new)
        })
        .collect();
    // A stable sort: several versions of one name keep Cargo's order.
    let mut kept: Vec<usize> = keep.into_iter().collect();
    kept.sort_by_key(|&at| names[at]);

    // Now that the set is final, write each dependency as briefly as Cargo
    // would.
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for &at in &kept {
        by_name.entry(names[at]).or_default().push(at);
    }
    let entry = |at: usize| {
        let package = &packages[at];
        let same_name = &by_name[names[at]];
        let same_version = same_name
            .iter()
            .filter(|&&other| packages[other].version == package.version)
            .count();
        match (same_name.len(), same_version, &package.source) {
            (1, _, _) => names[at].to_string(),
            (_, 1, _) | (_, _, None) => format!("{} {}", names[at], package.version),
            (_, _, Some(source)) => format!("{} {} ({source})", names[at], package.version),
        }
    };

    let mut out = String::from(HEADER);
    for &at in &kept {
        let package = &packages[at];
        out.push_str("\n[[package]]\n");
        out.push_str(&format!("name = {}\n", quoted(names[at])));
        out.push_str(&format!("version = {}\n", quoted(&package.version)));
        for (key, value) in [("source", &package.source), ("checksum", &package.checksum)] {
            if let Some(value) = value {
                out.push_str(&format!("{key} = {}\n", quoted(value)));
            }
        }
        let mut dependencies = edges[at].clone();
        dependencies.sort_by_key(|&dep| names[dep]);
        if !dependencies.is_empty() {
            out.push_str("dependencies = [\n");
            for dep in dependencies {
                out.push_str(&format!(" {},\n", quoted(&entry(dep))));
            }
            out.push_str("]\n");
        }
    }
    Ok(out)
}

/// The first lines of every lock file Cargo writes.
const HEADER: &str = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n";

fn quoted(text: &str) -> String {
    toml_edit::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REGISTRY: &str = "registry+https://github.com/rust-lang/crates.io-index";

    fn lock(packages: &[(&str, &str, bool, &[&str])]) -> String {
        let mut out = String::from(HEADER);
        for (name, version, registry, deps) in packages {
            out.push_str(&format!(
                "\n[[package]]\nname = \"{name}\"\nversion = \"{version}\"\n"
            ));
            if *registry {
                out.push_str(&format!("source = \"{REGISTRY}\"\nchecksum = \"00\"\n"));
            }
            if !deps.is_empty() {
                out.push_str("dependencies = [\n");
                for dep in *deps {
                    out.push_str(&format!(" \"{dep}\",\n"));
                }
                out.push_str("]\n");
            }
        }
        out
    }

    #[test]
    fn keeps_what_the_members_reach_renamed_sorted_and_briefly_named() {
        let workspace = lock(&[
            ("anyhow", "1.0.0", true, &[]),
            ("bitflags", "1.3.2", true, &[]),
            ("bitflags", "2.9.0", true, &[]),
            ("old_tool", "0.1.0", true, &["bitflags 1.3.2"]),
            (
                "s08_x",
                "0.1.0",
                false,
                &["anyhow", "bitflags 2.9.0", "shared"],
            ),
            ("shared", "0.1.0", false, &["anyhow"]),
            ("xtask", "0.1.0", false, &["old_tool", "s08_x"]),
        ]);
        let trimmed = trim(&workspace, &["s08_x", "shared"], &[("s08_x", "agent")]).unwrap();
        assert_eq!(
            trimmed,
            lock(&[
                ("agent", "0.1.0", false, &["anyhow", "bitflags", "shared"]),
                ("anyhow", "1.0.0", true, &[]),
                ("bitflags", "2.9.0", true, &[]),
                ("shared", "0.1.0", false, &["anyhow"]),
            ])
        );
        // Unchanged when nothing is trimmed or renamed: the format is Cargo's.
        let all = ["s08_x", "shared", "xtask"];
        assert_eq!(trim(&workspace, &all, &[]).unwrap(), workspace);
    }

    #[test]
    fn an_unknown_member_or_a_dangling_entry_is_an_error() {
        let workspace = lock(&[("shared", "0.1.0", false, &[])]);
        let error = trim(&workspace, &["nope"], &[]).unwrap_err().to_string();
        assert!(error.contains("nope"), "{error}");
        let workspace = lock(&[("shared", "0.1.0", false, &["missing"])]);
        let error = trim(&workspace, &["shared"], &[]).unwrap_err().to_string();
        assert!(error.contains("missing"), "{error}");
    }
}
