//! Writing out what a workspace member inherits, so its `Cargo.toml` means
//! the same thing outside the workspace.
//!
//! A member manifest leans on the workspace root in three ways, and each
//! becomes a plain value:
//!
//! - package fields written `edition.workspace = true` take the value of
//!   `[workspace.package]`;
//! - dependencies written `name.workspace = true` (or `{ workspace = true,
//!   features = [...] }`) take the root's `[workspace.dependencies]` entry,
//!   with the member's own `features` added and its `optional` and
//!   `default-features` kept, as Cargo merges them; a `path` there is
//!   relative to the root and is rewritten relative to the member;
//! - `[lints] workspace = true` becomes a copy of `[workspace.lints]`.
//!
//! The manifest is edited with `toml_edit`, so its comments and layout stay
//! as the lesson wrote them.

use anyhow::{Context, Result, bail};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, TableLike, Value};

/// The tables of a manifest that list dependencies (also found under
/// `[target.'cfg(...)']`).
const DEPENDENCY_TABLES: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];

/// What the workspace root's `Cargo.toml` offers its members to inherit.
#[derive(Debug)]
pub struct Inherited {
    package: Table,
    dependencies: Table,
    lints: Option<Table>,
}

impl Inherited {
    /// Reads the workspace root's manifest.
    pub fn parse(root_manifest: &str) -> Result<Inherited> {
        let doc: DocumentMut = root_manifest
            .parse()
            .context("parsing the workspace's Cargo.toml")?;
        let Some(workspace) = doc.get("workspace").and_then(Item::as_table) else {
            bail!("the root Cargo.toml has no [workspace] table");
        };
        let table = |key: &str| workspace.get(key).and_then(Item::as_table).cloned();
        Ok(Inherited {
            package: table("package").unwrap_or_default(),
            dependencies: table("dependencies").unwrap_or_default(),
            lints: table("lints"),
        })
    }
}

/// Does `item` say `workspace = true`?
fn inherits(item: &Item) -> bool {
    item.as_table_like()
        .and_then(|table| table.get("workspace"))
        .and_then(Item::as_bool)
        == Some(true)
}

/// The comment above a dotted key such as `anyhow.workspace = true`, which
/// `toml_edit` keeps with the inner key (`workspace`): when the dotted
/// table becomes a plain value, the comment must move to the outer key.
fn dotted_comment(item: &Item) -> Option<String> {
    let table = item.as_table().filter(|table| table.is_dotted())?;
    let (first, _) = table.iter().next()?;
    let prefix = table.key(first)?.leaf_decor().prefix()?;
    prefix.as_str().map(str::to_string)
}

/// A value moved from one document into another, without the spaces and
/// comments that surrounded it there.
fn bare(value: &Value) -> Value {
    let mut value = value.clone();
    value.decor_mut().clear();
    value
}

/// The member's manifest with everything it inherits written out. `depth`
/// is how many directories the member lies below the root (1 for `shared`,
/// 2 for `crates/NAME`), to rewrite the root's relative paths.
pub fn write_out(member_manifest: &str, from: &Inherited, depth: usize) -> Result<String> {
    let mut doc: DocumentMut = member_manifest
        .parse()
        .context("parsing a member's Cargo.toml")?;

    if let Some(package) = doc.get_mut("package").and_then(Item::as_table_mut) {
        for (mut key, item) in package.iter_mut() {
            if !inherits(item) {
                continue;
            }
            let Some(value) = from.package.get(key.get()).and_then(Item::as_value) else {
                bail!("package.{key} is inherited, but [workspace.package] has no {key}");
            };
            if let Some(comment) = dotted_comment(item) {
                key.leaf_decor_mut().set_prefix(comment);
            }
            *item = Item::Value(bare(value));
        }
    }

    let mut tables: Vec<&mut Table> = Vec::new();
    let (top, targets): (Vec<_>, Vec<_>) = doc
        .as_table_mut()
        .iter_mut()
        .partition(|(key, _)| key.get() != "target");
    for (key, item) in top {
        if DEPENDENCY_TABLES.contains(&key.get())
            && let Some(table) = item.as_table_mut()
        {
            tables.push(table);
        }
    }
    for (_, item) in targets {
        let Some(platforms) = item.as_table_mut() else {
            continue;
        };
        for (_, platform) in platforms.iter_mut() {
            let Some(platform) = platform.as_table_mut() else {
                continue;
            };
            for (key, item) in platform.iter_mut() {
                if DEPENDENCY_TABLES.contains(&key.get())
                    && let Some(table) = item.as_table_mut()
                {
                    tables.push(table);
                }
            }
        }
    }
    for table in tables {
        for (mut name, item) in table.iter_mut() {
            if !inherits(item) {
                continue;
            }
            let Some(declared) = from.dependencies.get(name.get()) else {
                bail!("dependency {name} is inherited, but [workspace.dependencies] has no {name}");
            };
            let merged = merge(name.get(), declared, item, depth)?;
            if let Some(comment) = dotted_comment(item) {
                name.leaf_decor_mut().set_prefix(comment);
            }
            *item = Item::Value(merged);
        }
    }

    if doc.get("lints").is_some_and(inherits) {
        let Some(lints) = &from.lints else {
            bail!("[lints] is inherited, but the workspace has no [workspace.lints]");
        };
        // The copied tables go where `[lints]` was; `[lints]` itself prints
        // no header, only its `[lints.rust]` and `[lints.clippy]` do.
        let position = doc
            .get("lints")
            .and_then(Item::as_table)
            .and_then(Table::position);
        let mut lints = lints.clone();
        lints.decor_mut().clear();
        lints.set_implicit(true);
        for (_, group) in lints.iter_mut() {
            if let Some(group) = group.as_table_mut() {
                group.decor_mut().clear();
                group.set_position(position);
            }
        }
        doc.insert("lints", Item::Table(lints));
    }

    Ok(doc.to_string())
}

// ANCHOR: merge
/// One dependency as Cargo sees it: the workspace's declaration, plus the
/// member's `features` (added to the workspace's) and its `optional` and
/// `default-features`. A lone version is written as a plain string.
fn merge(name: &str, declared: &Item, member: &Item, depth: usize) -> Result<Value> {
    let mut spec = match declared {
        Item::Value(Value::String(version)) => {
            let mut spec = InlineTable::new();
            spec.insert("version", Value::from(version.value().as_str()));
            spec
        }
        Item::Value(Value::InlineTable(spec)) => spec.clone(),
        Item::Table(spec) => spec.clone().into_inline_table(),
        _ => bail!("[workspace.dependencies] {name} is neither a version nor a table"),
    };
    let entries: Vec<(String, Value)> = spec
        .iter()
        .map(|(key, value)| (key.to_string(), bare(value)))
        .collect();
    spec.clear();
    for (key, value) in entries {
        spec.insert(&key, value);
    }

    if let Some(Value::String(path)) = spec.get("path") {
        let up = "../".repeat(depth);
        let path = format!("{up}{}", path.value());
        spec.insert("path", Value::from(path));
    }

    let member = member.as_table_like().context("an inherited dependency")?;
    if let Some(extra) = member.get("features").and_then(Item::as_array) {
        let mut features: Array = spec
            .get("features")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for feature in extra {
            if !features
                .iter()
                .any(|have| have.as_str() == feature.as_str())
            {
                features.push(bare(feature));
            }
        }
        features.fmt();
        spec.insert("features", Value::Array(features));
    }
    for key in ["optional", "default-features"] {
        if let Some(value) = member.get(key).and_then(Item::as_value) {
            spec.insert(key, bare(value));
        }
    }

    if spec.len() == 1
        && let Some(Value::String(version)) = spec.get("version")
    {
        return Ok(Value::from(version.value().as_str()).decorated(" ", ""));
    }
    spec.fmt();
    Ok(Value::InlineTable(spec).decorated(" ", ""))
}
// ANCHOR_END: merge

/// The dependency tables of a manifest, read-only: the three top-level ones
/// and those under `[target.'cfg(...)']`.
fn dependency_tables(doc: &DocumentMut) -> Vec<&Table> {
    let mut tables = Vec::new();
    for (key, item) in doc.as_table().iter() {
        if DEPENDENCY_TABLES.contains(&key)
            && let Some(table) = item.as_table()
        {
            tables.push(table);
        }
    }
    let platforms = doc
        .get("target")
        .and_then(Item::as_table)
        .into_iter()
        .flat_map(|targets| targets.iter())
        .filter_map(|(_, platform)| platform.as_table());
    for platform in platforms {
        for (key, item) in platform.iter() {
            if DEPENDENCY_TABLES.contains(&key)
                && let Some(table) = item.as_table()
            {
                tables.push(table);
            }
        }
    }
    tables
}

/// The crates a member depends on by path, as directories relative to the
/// workspace root: its own `path = "..."` entries, taken from `member_dir`
/// (the member's directory relative to the root), and the inherited ones
/// whose `[workspace.dependencies]` entry has a `path`, already relative to
/// the root. A path that climbs out of the workspace is an error: a fork
/// could not carry it.
pub fn path_dependencies(
    member_manifest: &str,
    from: &Inherited,
    member_dir: &str,
) -> Result<Vec<String>> {
    let doc: DocumentMut = member_manifest
        .parse()
        .context("parsing a member's Cargo.toml")?;
    let mut out = Vec::new();
    for table in dependency_tables(&doc) {
        for (name, item) in table.iter() {
            let path = if inherits(item) {
                from.dependencies
                    .get(name)
                    .and_then(Item::as_table_like)
                    .and_then(|spec| spec.get("path"))
                    .and_then(Item::as_str)
                    .map(str::to_string)
            } else {
                item.as_table_like()
                    .and_then(|spec| spec.get("path"))
                    .and_then(Item::as_str)
                    .map(|path| format!("{member_dir}/{path}"))
            };
            let Some(path) = path else {
                continue;
            };
            let Some(normal) = normalise(&path) else {
                bail!("dependency {name} of {member_dir} lies outside the workspace ({path})");
            };
            if !out.contains(&normal) {
                out.push(normal);
            }
        }
    }
    Ok(out)
}

/// A relative `/`-separated path with `.` and `..` resolved; `None` if it
/// climbs above its starting point.
pub fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// The `path` of every dependency in a manifest, wherever it is declared,
/// for the check that a fork refers to nothing outside itself.
pub fn dependency_paths(manifest: &str) -> Result<Vec<String>> {
    let doc: DocumentMut = manifest.parse().context("parsing a Cargo.toml")?;
    let mut out = Vec::new();
    let mut pending: Vec<&dyn TableLike> = vec![doc.as_table()];
    while let Some(table) = pending.pop() {
        for (key, item) in table.iter() {
            if key == "path"
                && let Some(path) = item.as_str()
            {
                out.push(path.to_string());
            }
            if let Some(inner) = item.as_table_like() {
                pending.push(inner);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = r#"[workspace]
members = ["shared", "crates/*"]

[workspace.package]
edition = "2024"
license = "MIT"

[workspace.dependencies]
shared = { path = "shared" }
anyhow = "1"
# A comment that belongs to the root, not to the member.
tokio = { version = "1", features = ["rt", "macros"] }
croner = { version = "4", default-features = false }

[workspace.lints.rust]
unsafe_code = "forbid"

[workspace.lints.clippy]
unwrap_used = "deny"
"#;

    const MEMBER: &str = r#"[package]
name = "s08_x"
edition.workspace = true
license.workspace = true
publish = false

[dependencies]
# Errors at the edges.
anyhow.workspace = true
serde = "1"
shared.workspace = true

[dev-dependencies]
shared = { workspace = true, features = ["testing"] }
tokio = { workspace = true, features = ["test-util", "rt"] }

[target.'cfg(unix)'.dependencies]
croner = { workspace = true, optional = true }

[lints]
workspace = true

[[bench]]
name = "harness"
"#;

    #[test]
    fn every_inherited_field_dependency_and_lint_is_written_out() {
        let inherited = Inherited::parse(ROOT).unwrap();
        let out = write_out(MEMBER, &inherited, 2).unwrap();
        assert_eq!(
            out,
            r#"[package]
name = "s08_x"
edition = "2024"
license = "MIT"
publish = false

[dependencies]
# Errors at the edges.
anyhow = "1"
serde = "1"
shared = { path = "../../shared" }

[dev-dependencies]
shared = { path = "../../shared", features = ["testing"] }
tokio = { version = "1", features = ["rt", "macros", "test-util"] }

[target.'cfg(unix)'.dependencies]
croner = { version = "4", default-features = false, optional = true }

[lints.rust]
unsafe_code = "forbid"

[lints.clippy]
unwrap_used = "deny"

[[bench]]
name = "harness"
"#
        );
        assert!(!out.contains("workspace"), "{out}");
        let mut paths = dependency_paths(&out).unwrap();
        paths.sort();
        assert_eq!(paths, ["../../shared", "../../shared"]);
    }

    #[test]
    fn path_dependencies_are_found_own_and_inherited_relative_to_the_root() {
        let inherited = Inherited::parse(ROOT).unwrap();
        let member = "[dependencies]\nshared.workspace = true\nanyhow.workspace = true\n\
                      [dev-dependencies]\nhelper = { path = \"../../examples/helper\" }\n\
                      [target.'cfg(unix)'.dependencies]\nshared = { workspace = true }\n";
        assert_eq!(
            path_dependencies(member, &inherited, "crates/s08_x").unwrap(),
            ["shared", "examples/helper"]
        );
        let escaping = "[dependencies]\nfar = { path = \"../../../far\" }\n";
        let error = path_dependencies(escaping, &inherited, "crates/s08_x")
            .unwrap_err()
            .to_string();
        assert!(error.contains("far"), "{error}");
        assert_eq!(normalise("a/./b/../c").as_deref(), Some("a/c"));
        assert_eq!(normalise("a/../.."), None);
    }

    #[test]
    fn what_the_workspace_does_not_declare_is_an_error() {
        let inherited = Inherited::parse("[workspace]\n").unwrap();
        let error = write_out(MEMBER, &inherited, 2).unwrap_err().to_string();
        assert!(error.contains("package.edition"), "{error}");
        let error = write_out("[dependencies]\nanyhow.workspace = true\n", &inherited, 2)
            .unwrap_err()
            .to_string();
        assert!(error.contains("anyhow"), "{error}");
        assert!(Inherited::parse("[package]\n").is_err());
    }
}
