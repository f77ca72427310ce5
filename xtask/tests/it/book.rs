//! The real repository passes `cargo xtask check`, so `cargo test
//! --workspace` fails on everything the check catches: stale generated
//! pages, chapters out of step with crates, broken includes and links,
//! "try it" commands with unknown crates or flags, files that changed
//! between lessons without the chapter saying so, and inherited test modules
//! that are no longer identical.

#[test]
fn book_and_lessons_agree() {
    let problems = xtask::check::run(&xtask::repo_root()).unwrap();
    let report: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(
        problems.is_empty(),
        "cargo xtask check found {} problem(s):\n{}",
        problems.len(),
        report.join("\n")
    );
}

/// An edition is checked when its directory exists (so the made-up
/// repositories of the other tests need none); the real book has them all.
#[test]
fn every_edition_is_in_the_book() {
    let root = xtask::repo_root();
    for edition in &xtask::i18n::TRANSLATIONS {
        assert!(
            root.join(edition.src()).is_dir(),
            "{} is missing: the {} edition is part of the book",
            edition.src(),
            edition.label
        );
    }
}
