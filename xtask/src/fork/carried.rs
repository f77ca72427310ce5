//! What a fork carries besides the lesson: the course's crates the lesson
//! stands on, and the folders and files its code and tests reach.
//!
//! Two kinds of link lead out of a lesson's directory, and the fork must
//! follow both, or it would refer back to the course:
//!
//! - path dependencies, written in the member's manifest or inherited from
//!   `[workspace.dependencies]` (`shared`, and from lesson 18 on the
//!   course's MCP server under `examples/mcp_server`). Each crate found is
//!   carried as a member of the fork, and its own path dependencies are
//!   followed in turn;
//! - paths the files build from their crate directory, `../../skills` or
//!   `../../examples/settings/settings.toml`. The smallest folder on such a
//!   path that holds no crate is carried as it is (`skills/`,
//!   `examples/settings/`), so a reference into `examples/` does not drag
//!   in every crate there; a path that leads into a crate carries that
//!   crate as a member.
//!
//! Build output, hidden runtime state and installed npm packages
//! (`node_modules`) are never part of either: see [`is_skipped_dir`].

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::inherit::{self, Inherited};

/// The top-level folders a reference never carries: the lessons and the
/// course's own machinery (`shared` comes as a dependency when it is one).
const COURSE_OWN: [&str; 5] = ["crates", "shared", "target", "xtask", "docs"];

/// A crate of the course that the fork carries as a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its directory relative to the course's root, `/`-separated.
    pub dir: String,
    /// Its package name, as the lock file lists it.
    pub package: String,
}

/// Everything a fork of one lesson carries.
#[derive(Debug)]
pub struct Carried {
    /// The lesson first, then the crates it reaches, in the order found.
    pub members: Vec<Member>,
    /// Folders and files outside every member, relative to the root,
    /// sorted.
    pub resources: Vec<String>,
}

/// What the fork of the lesson at `lesson_dir` (relative to `root`) carries.
pub fn carried(root: &Path, lesson_dir: &str, inherited: &Inherited) -> Result<Carried> {
    let mut members: Vec<Member> = Vec::new();
    let mut resources: Vec<String> = Vec::new();
    let mut pending = vec![lesson_dir.to_string()];
    while let Some(dir) = pending.pop() {
        if members.iter().any(|member| member.dir == dir) {
            continue;
        }
        let manifest_path = root.join(&dir).join("Cargo.toml");
        let manifest = std::fs::read_to_string(&manifest_path)
            .with_context(|| format!("reading {}", manifest_path.display()))?;
        let package = package_name(&manifest)
            .with_context(|| format!("{dir}/Cargo.toml names no package"))?;
        members.push(Member {
            dir: dir.clone(),
            package,
        });

        let mut found = inherit::path_dependencies(&manifest, inherited, &dir)
            .with_context(|| format!("reading the dependencies of {dir}"))?;
        let depth = dir.split('/').count();
        for reference in references(&root.join(&dir), depth)? {
            match place(root, &reference) {
                Some(Place::Crate(crate_dir)) => found.push(crate_dir),
                Some(Place::Resource(resource)) if !resources.contains(&resource) => {
                    resources.push(resource);
                }
                Some(Place::Resource(_)) | None => {}
            }
        }
        // Reversed, so the stack hands them out in the order found.
        pending.extend(found.into_iter().rev());
    }
    // A resource inside a member's directory comes with the member.
    resources.retain(|resource| {
        !members
            .iter()
            .any(|member| Path::new(resource).starts_with(&member.dir))
    });
    resources.sort();
    Ok(Carried { members, resources })
}

/// The `[package] name` of a manifest.
fn package_name(manifest: &str) -> Option<String> {
    let doc: toml_edit::DocumentMut = manifest.parse().ok()?;
    doc.get("package")?
        .get("name")?
        .as_str()
        .map(str::to_string)
}

/// Whether a directory is never carried nor searched: build output, hidden
/// state (`.git`, `.agent`) and the packages `npm ci` installs, which the
/// fork's user installs again from the lock file that does come along.
pub fn is_skipped_dir(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

/// Every file under `dir`, leaving out what [`is_skipped_dir`] names.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            if path.is_dir() {
                if !is_skipped_dir(&entry.file_name().to_string_lossy()) {
                    pending.push(path);
                }
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The root-relative paths that the files of a crate `depth` levels below
/// the root reach with `../` repeated `depth` times, as lists of path
/// components (only the plain names after the climb, up to the first
/// character that cannot be part of a path).
fn references(crate_dir: &Path, depth: usize) -> Result<Vec<Vec<String>>> {
    let climb = "../".repeat(depth);
    let mut out: Vec<Vec<String>> = Vec::new();
    for path in files(crate_dir)? {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (at, _) in text.match_indices(&climb) {
            let rest: String = text[at + climb.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_-./@".contains(*c))
                .collect();
            let parts: Vec<String> = rest
                .split('/')
                .take_while(|part| !part.is_empty() && *part != "." && *part != "..")
                .map(str::to_string)
                .collect();
            if !parts.is_empty() && !out.contains(&parts) {
                out.push(parts);
            }
        }
    }
    Ok(out)
}

/// Where a reference lands in the course.
#[derive(Debug, PartialEq, Eq)]
enum Place {
    /// Inside the crate at this directory.
    Crate(String),
    /// On a folder that holds no crate, or a file outside every crate.
    Resource(String),
}

/// Walks `parts` down from `root` to the first directory that is a crate,
/// or holds none, or to a file; `None` if the path leaves what exists or
/// starts in one of the course's own folders.
fn place(root: &Path, parts: &[String]) -> Option<Place> {
    let first = parts.first()?;
    if COURSE_OWN.contains(&first.as_str()) || is_skipped_dir(first) {
        return None;
    }
    let mut relative = String::new();
    for part in parts {
        if is_skipped_dir(part) {
            return None;
        }
        if !relative.is_empty() {
            relative.push('/');
        }
        relative.push_str(part);
        let full = root.join(&relative);
        if full.is_file() {
            return Some(Place::Resource(relative));
        }
        if !full.is_dir() {
            return None;
        }
        if full.join("Cargo.toml").is_file() {
            return Some(Place::Crate(relative));
        }
        if !holds_crate(&full) {
            return Some(Place::Resource(relative));
        }
    }
    // The path names a folder of crates itself (`../../examples`): carrying
    // all of them is not what it means, and which one it means cannot be
    // told, so it carries nothing.
    None
}

/// Whether any crate lies under `dir`.
fn holds_crate(dir: &Path) -> bool {
    files(dir).is_ok_and(|files| {
        files
            .iter()
            .any(|file| file.file_name().is_some_and(|name| name == "Cargo.toml"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up course: a lesson that depends on a helper crate by path
    /// through the workspace, reads the skills and one example file, and
    /// whose helper depends on `shared`.
    fn course() -> tempfile::TempDir {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace]\n[workspace.dependencies]\nshared = { path = \"shared\" }\n\
             helper = { path = \"examples/helper\" }\n",
        );
        write("shared/Cargo.toml", "[package]\nname = \"shared\"\n");
        write(
            "examples/helper/Cargo.toml",
            "[package]\nname = \"helper\"\n[dependencies]\nshared.workspace = true\n",
        );
        write("examples/helper/npm/package.json", "{}");
        write("examples/helper/npm/node_modules/x/index.js", "");
        write("examples/settings/settings.toml", "");
        write("examples/other/Cargo.toml", "[package]\nname = \"other\"\n");
        write("skills/a/SKILL.md", "");
        write(
            "crates/s01_x/Cargo.toml",
            "[package]\nname = \"s01_x\"\n[dev-dependencies]\nhelper.workspace = true\n",
        );
        write(
            "crates/s01_x/src/lib.rs",
            "const SKILLS: &str = \"../../skills\";\n\
             const SETTINGS: &str = \"../../examples/settings/settings.toml\";\n\
             const NPM: &str = \"../../examples/helper/npm/node_modules/x\";\n\
             const NOT_HERE: &str = \"../../etc/passwd\";\n\
             const ESCAPE: &str = \"references/../../../secret\";\n\
             const ALL: &str = \"../../examples\";\n",
        );
        temp
    }

    #[test]
    fn dependencies_are_followed_and_references_carry_the_smallest_folder() {
        let temp = course();
        let inherited =
            Inherited::parse(&std::fs::read_to_string(temp.path().join("Cargo.toml")).unwrap())
                .unwrap();
        let carried = carried(temp.path(), "crates/s01_x", &inherited).unwrap();
        let dirs: Vec<&str> = carried.members.iter().map(|m| m.dir.as_str()).collect();
        assert_eq!(dirs, ["crates/s01_x", "examples/helper", "shared"]);
        let packages: Vec<&str> = carried.members.iter().map(|m| m.package.as_str()).collect();
        assert_eq!(packages, ["s01_x", "helper", "shared"]);
        // Not examples/ as a whole (examples/other stays behind), and
        // nothing from inside a member or from a path that does not exist.
        assert_eq!(carried.resources, ["examples/settings", "skills"]);
    }

    #[test]
    fn installed_packages_and_build_output_are_never_listed() {
        let temp = course();
        let all = files(temp.path()).unwrap();
        assert!(
            all.iter()
                .all(|f| !f.to_string_lossy().contains("node_modules"))
        );
        assert!(
            all.iter()
                .any(|f| f.ends_with("examples/helper/npm/package.json"))
        );
    }
}
