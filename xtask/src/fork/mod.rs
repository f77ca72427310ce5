//! `cargo xtask fork s08 ../my-agent`: one lesson as a Cargo project of its
//! own, which builds and tests with nothing from this repository.
//!
//! A lesson crate cannot simply be copied out: its `Cargo.toml` inherits
//! from the workspace root, and it stands on `shared` (and, from lesson 18
//! on, on the course's MCP server in `examples/`). The fork is a small
//! workspace laid out like the course, so every path the lesson computes
//! from its manifest (`../../skills`) still lands on what it means:
//!
//! ```text
//! my-agent/
//!   Cargo.toml      [workspace]: the fork's crates as members; the course's profiles
//!   Cargo.lock      the course's lock, trimmed to these members
//!   README.md       where the stage came from, how to run and test it
//!   crates/NAME/    the lesson: sources, tests and snapshots, demo.json
//!   shared/         the course's shared crate, unchanged but for its manifest
//!   examples/…      the course's crates the lesson depends on (lesson 18 on)
//!   skills/         …and any folder or file the lesson reads at run time
//! ```
//!
//! What comes along is found by following the lesson's path dependencies
//! and the `../../` paths in its files ([`carried`]). Every crate's
//! manifest is rewritten with everything it inherited written out
//! ([`inherit`]); the lock keeps the course's versions, so the fork builds
//! offline from the registry cache with `--locked` ([`lockfile`]). With a
//! new name, the crate name is replaced in every file of the lesson, as
//! `cargo xtask diff` replaces it when it compares two lessons. Installed
//! npm packages never come along: the README says how to install them.

pub mod carried;
pub mod check;
pub mod inherit;
pub mod lockfile;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::lessons::Lesson;
use crate::manifest::Manifest;
use crate::rust_items;

/// Where the lesson goes in the fork: two levels down, as in the course.
pub const LESSON_PARENT: &str = "crates";

/// What was written.
#[derive(Debug)]
pub struct Forked {
    /// The fork's root directory.
    pub dir: PathBuf,
    /// The crate's name in the fork.
    pub name: String,
    /// The fork's crates, as directories below its root: the lesson
    /// first, then the course's crates it stands on.
    pub members: Vec<String>,
    /// The package names of those crates, in the same order.
    pub packages: Vec<String>,
    /// The folders and files copied because the lesson reads them.
    pub resources: Vec<String>,
    /// The folders with an npm `package.json` whose packages the lesson's
    /// tests use once installed.
    pub npm: Vec<String>,
    /// With `--exercise`: the regions left for the student (`s03 deny`).
    pub exercise: Vec<String>,
}

// ANCHOR: fork
/// Writes `lesson` of the course at `root` into `dest` as a standalone
/// project, its crate called `name` (default: the lesson's own name). With
/// `offline`, Cargo settles the fork's lock from the registry cache alone;
/// without it, Cargo downloads what the cache lacks (on a fresh machine
/// where only `cargo run` has been done, the lesson's dev-dependencies).
pub fn fork(
    root: &Path,
    lesson: &Lesson,
    dest: &Path,
    name: Option<&str>,
    offline: bool,
) -> Result<Forked> {
    fork_with(root, lesson, dest, name, offline, false)
}
// ANCHOR_END: fork

/// [`fork`], and with `exercise` the lesson's exercise regions stubbed and
/// the exercise's tool added (see [`crate::exercise`]).
pub fn fork_with(
    root: &Path,
    lesson: &Lesson,
    dest: &Path,
    name: Option<&str>,
    offline: bool,
    exercise: bool,
) -> Result<Forked> {
    let name = name.unwrap_or(&lesson.name).to_string();
    check_name(&name)?;
    check_destination(root, dest)?;

    let lesson_dir = format!("{LESSON_PARENT}/{}", lesson.name);
    let inherited = inherit::Inherited::parse(&read(&root.join("Cargo.toml"))?)?;
    let carried = carried::carried(root, &lesson_dir, &inherited)?;
    if let Some(clash) = carried
        .members
        .iter()
        .find(|m| m.package == name && m.dir != lesson_dir)
    {
        bail!(
            "the fork already has a crate called {name} ({}); pick another name",
            clash.dir
        );
    }

    // The lesson, renamed throughout, then the crates it stands on (`shared`,
    // the course's MCP server) as they are, each with its manifest written
    // out at its own depth below the root.
    let mut members = Vec::new();
    let mut packages = Vec::new();
    for member in &carried.members {
        let is_lesson = member.dir == lesson_dir;
        let dir = if is_lesson {
            format!("{LESSON_PARENT}/{name}")
        } else {
            member.dir.clone()
        };
        let rename = |text: &str| {
            if is_lesson {
                text.replace(&lesson.name, &name)
            } else {
                text.to_string()
            }
        };
        copy_tree(&root.join(&member.dir), &dest.join(&dir), &rename)?;
        let manifest = dest.join(&dir).join("Cargo.toml");
        let depth = dir.split('/').count();
        let text = inherit::write_out(&read(&manifest)?, &inherited, depth)
            .with_context(|| format!("writing out {dir}/Cargo.toml"))?;
        write(&manifest, &text)?;
        members.push(dir);
        packages.push(if is_lesson {
            name.clone()
        } else {
            member.package.clone()
        });
    }

    for resource in &carried.resources {
        copy_tree(&root.join(resource), &dest.join(resource), &str::to_string)?;
    }
    let mut stubbed = Vec::new();
    if exercise {
        let all = crate::lessons::discover(root)?;
        let written = crate::exercise::write_into_fork(&all, lesson, dest, &name)?;
        stubbed = written.regions;
        members.push(written.member);
        packages.push(written.package);
    }
    // Clippy reads its settings from the nearest clippy.toml above a crate.
    if root.join("clippy.toml").is_file() {
        std::fs::copy(root.join("clippy.toml"), dest.join("clippy.toml"))?;
    }

    write(
        &dest.join("Cargo.toml"),
        &root_manifest(&read(&root.join("Cargo.toml"))?, &members)?,
    )?;
    let carried_packages: Vec<&str> = carried.members.iter().map(|m| m.package.as_str()).collect();
    let lock = lockfile::trim(
        &read(&root.join("Cargo.lock"))?,
        &carried_packages,
        &[(&lesson.name, &name)],
    )?;
    write(&dest.join("Cargo.lock"), &lock)?;
    settle_lock(dest, offline)?;
    write(&dest.join(".gitignore"), GITIGNORE)?;
    let npm = npm_dirs(dest)?;
    let mut text = readme(root, lesson, &name, &carried, &npm)?;
    if exercise {
        text.push_str(&crate::exercise::readme_section(lesson, &stubbed));
    }
    write(&dest.join("README.md"), &text)?;

    Ok(Forked {
        dir: dest.to_path_buf(),
        name,
        members,
        packages,
        resources: carried.resources,
        npm,
        exercise: stubbed,
    })
}

/// Lets Cargo itself finish the trimmed lock. The course's lock
/// records the features the whole workspace turns on (another lesson may
/// enable `indexmap`'s `serde`, say); the fork turns on fewer, so Cargo would
/// drop those edges on the first build and `--locked` would refuse. Resolving
/// against a lock that pins every package changes no version: it only drops
/// what the fork does not use.
///
/// The metadata asked for is this machine's platform only: for every
/// platform, Cargo would want the manifests of crates no build here ever
/// downloaded (`android_system_properties`, which `iana-time-zone` needs on
/// Android), and offline it cannot get them. The lock it writes is the
/// whole resolution either way.
///
/// Offline is a choice, not the default: Cargo needs the manifest of every
/// package the fork's members reach, dev-dependencies included, and a
/// registry cache filled by `cargo run` alone does not hold those.
fn settle_lock(dest: &Path, offline: bool) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let version = Command::new(&cargo)
        .arg("-vV")
        .output()
        .context("running cargo -vV")?;
    let version = String::from_utf8_lossy(&version.stdout);
    let Some(host) = version.lines().find_map(|line| line.strip_prefix("host: ")) else {
        bail!("cargo -vV names no host platform:\n{version}");
    };
    let mut metadata = Command::new(&cargo);
    metadata.arg("metadata");
    if offline {
        metadata.arg("--offline");
    }
    let output = metadata
        .args([
            "--format-version",
            "1",
            "--filter-platform",
            host.trim(),
            "--manifest-path",
        ])
        .arg(dest.join("Cargo.toml"))
        .output()
        .context("running cargo metadata in the fork")?;
    if !output.status.success() {
        let hint = if offline {
            "\n(--offline uses the registry cache alone: run without it to let Cargo download what the cache lacks)"
        } else {
            ""
        };
        bail!(
            "cargo metadata in the fork failed:\n{}{hint}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// A crate name that is also the Rust identifier `extern crate … as lesson`
/// uses, so one replacement renames manifest, binary and code alike.
fn check_name(name: &str) -> Result<()> {
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        bail!(
            "{name:?} is not a crate name a fork can take: use lowercase letters, digits and \
             underscores, starting with a letter (my_agent)"
        );
    }
    if name == "shared" {
        bail!("the fork already has a crate called shared; pick another name");
    }
    Ok(())
}

/// Refuses a directory with anything in it, and one inside the course
/// (it would become part of the course's workspace).
fn check_destination(root: &Path, dest: &Path) -> Result<()> {
    if dest.exists() {
        let mut entries = std::fs::read_dir(dest)
            .with_context(|| format!("{} is not a directory", dest.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} is not empty; fork into a new or empty directory",
                dest.display()
            );
        }
    }
    let root = root.canonicalize()?;
    // The destination may not exist yet: compare its nearest existing
    // ancestor, canonicalised, with the rest of the path appended.
    let mut existing = dest.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        let Some(name) = existing.file_name() else {
            break;
        };
        rest.push(name.to_os_string());
        existing.pop();
    }
    let mut full = if existing.as_os_str().is_empty() {
        std::env::current_dir()?
    } else {
        existing.canonicalize()?
    };
    full.extend(rest.iter().rev());
    if full.starts_with(&root) {
        bail!(
            "{} is inside the course's repository; fork into a directory outside it",
            dest.display()
        );
    }
    Ok(())
}

/// The folders of the fork, relative to its root, that hold an npm
/// `package.json` (the third-party MCP servers lesson 18's tests connect
/// to): the README says how to install them, since the fork never carries
/// `node_modules`.
fn npm_dirs(dest: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for file in carried::files(dest)? {
        if file.file_name().is_some_and(|name| name == "package.json")
            && let Some(dir) = file.parent()
        {
            out.push(dir.strip_prefix(dest)?.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(out)
}

/// Whether a file of the course belongs in a fork: not an editor backup
/// or a pending snapshot (build output, hidden runtime state and installed
/// npm packages are left out by [`carried::files`] already).
fn is_copied(relative: &Path) -> bool {
    let text = relative.to_string_lossy();
    ![".rs.bk", ".pending-snap", ".snap.new"]
        .iter()
        .any(|suffix| text.ends_with(suffix))
        // The exercise's list is the course's: `--exercise` writes what the
        // fork needs of it into `exercise/`.
        && text != crate::lessons::EXERCISE_TOML
}

/// Copies `from` (a folder, or a single file) into `to`, passing every
/// UTF-8 file's text (and every path) through `edit`.
fn copy_tree(from: &Path, to: &Path, edit: &dyn Fn(&str) -> String) -> Result<()> {
    let (base, files) = if from.is_file() {
        (from.parent().unwrap_or(from), vec![from.to_path_buf()])
    } else {
        (from, carried::files(from)?)
    };
    let to = if from.is_file() {
        to.parent().unwrap_or(to)
    } else {
        to
    };
    for path in files {
        let relative = path.strip_prefix(base)?;
        if !is_copied(relative) {
            continue;
        }
        let target = to.join(edit(&relative.to_string_lossy()));
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => edit(&text).into_bytes(),
            Err(err) => err.into_bytes(),
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, bytes).with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(())
}

/// The fork's own root manifest: the course's, with its members replaced
/// by the fork's crates (`members`, the lesson first) and nothing left to
/// inherit (the members write it out). Profiles and the resolver stay, with
/// their comments.
fn root_manifest(course: &str, members: &[String]) -> Result<String> {
    let mut doc: toml_edit::DocumentMut = course.parse().context("parsing Cargo.toml")?;
    let Some(workspace) = doc.get_mut("workspace").and_then(|w| w.as_table_mut()) else {
        bail!("the course's Cargo.toml has no [workspace]");
    };
    for key in ["package", "dependencies", "lints", "exclude"] {
        workspace.remove(key);
    }
    let Some((lesson, others)) = members.split_first() else {
        bail!("a fork without its lesson");
    };
    // The crates the lesson stands on (`shared` sorts after `examples/…`,
    // but is the one everything needs, so it comes first), then the lesson.
    let mut listed: Vec<&String> = others.iter().collect();
    listed.sort_by_key(|dir| (dir.as_str() != "shared", dir.as_str()));
    let mut array = toml_edit::Array::new();
    for dir in listed.into_iter().chain([lesson]) {
        array.push(dir.as_str());
    }
    workspace.insert("members", toml_edit::value(array));
    // `cargo run` and `cargo test` at the root mean the lesson.
    let mut default = toml_edit::Array::new();
    default.push(lesson.as_str());
    workspace.insert("default-members", toml_edit::value(default));
    doc.decor_mut()
        .set_prefix("# Forked from the Rust agent course by `cargo xtask fork`; see README.md.\n");
    Ok(doc.to_string())
}

const GITIGNORE: &str = "/target\n**/*.rs.bk\n.env\n*.pending-snap\n*.snap.new\n";

/// The fork's README: where it came from and the two commands.
fn readme(
    root: &Path,
    lesson: &Lesson,
    name: &str,
    carried: &carried::Carried,
    npm: &[String],
) -> Result<String> {
    let lib = read(&lesson.dir.join("src/lib.rs"))?;
    let title = rust_items::lesson_title(&lib).unwrap_or_else(|| lesson.name.clone());
    let description = Manifest::parse(&read(&lesson.dir.join("Cargo.toml"))?)
        .description
        .map_or(String::new(), |(_, text)| format!("\n> {text}\n"));
    let commit = match commit(root) {
        Some((commit, false)) => format!(", at commit `{commit}`"),
        Some((commit, true)) => format!(", at commit `{commit}` with uncommitted changes"),
        None => String::new(),
    };
    let renamed = if name == lesson.name {
        String::new()
    } else {
        format!(" (there called `{}`)", lesson.name)
    };
    // The crates besides `shared` and the lesson, each with the line its
    // manifest describes it by.
    let mut crates = String::new();
    for member in carried.members.iter().skip(1) {
        if member.dir == "shared" {
            continue;
        }
        let manifest = Manifest::parse(&read(&root.join(&member.dir).join("Cargo.toml"))?);
        let what = manifest
            .description
            .map_or(String::new(), |(_, text)| format!(" {text}"));
        crates.push_str(&format!(
            "- `{}/`: package `{}`, which the lesson depends on.{what}\n",
            member.dir, member.package
        ));
    }
    let list: Vec<String> = carried
        .resources
        .iter()
        .map(|r| {
            if root.join(r).is_dir() {
                format!("`{r}/`")
            } else {
                format!("`{r}`")
            }
        })
        .collect();
    let resources = match list.split_last() {
        None => String::new(),
        Some((only, [])) => {
            format!("\n{only} came along because the lesson reads it at run time.\n")
        }
        Some((last, rest)) => format!(
            "\n{} and {last} came along because the lesson reads them at run time.\n",
            rest.join(", ")
        ),
    };
    let npm = if npm.is_empty() {
        String::new()
    } else {
        let commands: Vec<String> = npm
            .iter()
            .map(|dir| format!("npm ci --prefix {dir}"))
            .collect();
        format!(
            "
Some tests connect to third-party MCP servers from the npm registry. Install them once
(Node.js needed) with

```sh
{}
```

Without them those tests say `skipped:` and pass; everything else runs as it is.
",
            commands.join("\n")
        )
    };
    Ok(format!(
        "# {name}

A stage of the Rust agent course made your own: lesson {number}, *{title}*{renamed}, \
forked by `cargo xtask fork`{commit}.
{description}
```sh
cargo run                  # the REPL (the demo model plays when no model is configured)
cargo test                 # the lesson's tests, offline
```
{npm}
`cargo run -- --demo --workdir /tmp/play -p \"…\"` runs one request with the demo model
in a scratch directory; `cargo run -- --help` lists the flags. A real model is configured
as in the course: `ANTHROPIC_API_KEY` (and `MODEL_ID`), or `OPENAI_BASE_URL` for an
OpenAI-compatible server, in the environment or in a `.env` file.

## Where things are

- `{LESSON_PARENT}/{name}/`: the lesson (`src/lib.rs` says where to start reading; the
  tests are in `tests/it/`, the demo script in `demo.json`).
- `shared/`: the ground the lesson stands on (the agent loop, models, base tools, the
  terminal), as the course has it; `cargo test -p shared` runs its tests.
{crates}{resources}
Nothing here refers back to the course: each manifest writes out the versions, features
and lints it used to inherit, and `Cargo.lock` pins the versions the course was tested
with, so `cargo build --offline --locked` works from a warm registry cache.

The chapter that explains this stage is `docs/src/{chapter}` in the course's repository
(and what it changed since the lesson before, `docs/src/{changes}`).
",
        number = lesson.number,
        chapter = lesson.chapter_file(),
        changes = lesson.changes_file(),
    ))
}

/// The course's current commit and whether its tree has changes, if git
/// can tell.
fn commit(root: &Path) -> Option<(String, bool)> {
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty = git(&["status", "--porcelain"]).is_some_and(|status| !status.is_empty());
    Some((commit, dirty))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
