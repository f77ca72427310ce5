//! The made-up repository of [`crate::fixture`] with a Chinese edition,
//! `docs/zh`: the generated pages in Chinese (snapshots), and for each rule
//! of translations a change that breaks it and the message that names the
//! fix.

// The helpers below are test code too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use tempfile::TempDir;
use xtask::i18n::{self, State};

use crate::fixture::{edit, fixture, problems, write};

const INTRODUCTION: &str = "# 简介 {#introduction}\n\n从[第 1 课](s01_first.md#try-it)开始。\n";

const FIRST: &str = "# 1. 第一课 {#1-the-first}\n\n> *\u{201c}一个循环 | 一个工具\u{201d}*——还有更多。\n\n\
     ```rust\n{{#include ../../crates/s01_first/src/hooks.rs:tools}}\n```\n\n\
     ## 动手试试 {#try-it}\n\n```sh\ncargo run -p s01_first -- --demo -p \"list files\"\n```\n";

const SECOND: &str = "# 2. 第二课 {#2-the-second}\n\n加入 `src/todo.rs`；修改 src/hooks.rs、src/lib.rs 和 Cargo.toml。\n\n\
     ```sh\n$ cargo run -p s02_second -- --nag-after 3 -p hi\n$ cargo xtask diff s01 s02\n```\n\n\
     参见[改动了什么](changes/s02_second.md#types-and-functions)。\n";

/// The part of the real switcher that the check reads.
const SWITCHER: &str = "const EDITIONS = [\n  { lang: 'en', dir: '', label: 'English' },\n  { lang: 'zh-CN', dir: 'zh/', label: '中文' },\n];\n";

/// The translated page `page` of `docs/zh`, made from the English page as
/// it is now: its source line, a blank line, the text.
fn translate(root: &Path, page: &str, text: &str) {
    let english = fs::read(root.join("docs/src").join(page)).unwrap();
    write(
        root,
        &format!("docs/zh/{page}"),
        &format!(
            "<!-- source: docs/src/{page} sha256:{} -->\n\n{text}",
            i18n::sha256_hex(&english)
        ),
    );
}

/// The fixture with every page translated into Chinese, a glossary, the
/// switcher, and the generated pages of both editions.
fn translated() -> TempDir {
    let dir = fixture();
    let root = dir.path();
    translate(root, "introduction.md", INTRODUCTION);
    translate(root, "s01_first.md", FIRST);
    translate(root, "s02_second.md", SECOND);
    write(
        root,
        "docs/zh/glossary.md",
        "# 术语表 {#glossary}\n\n| English | 中文 |\n| --- | --- |\n| lesson | 课 |\n",
    );
    write(root, "docs/i18n/switcher.js", SWITCHER);
    xtask::docs::generate(root).unwrap();
    dir
}

fn read(root: &Path, path: &str) -> String {
    fs::read_to_string(root.join(path)).unwrap()
}

#[test]
fn a_translated_edition_passes_every_check() {
    let dir = translated();
    assert_eq!(problems(dir.path()), Vec::<String>::new());
    assert_eq!(
        xtask::docs::generate(dir.path()).unwrap(),
        Vec::<String>::new()
    );
    // The translation's line 1 is what `sha256sum` prints for the English file.
    let english = read(dir.path(), "docs/src/s01_first.md");
    let line = read(dir.path(), "docs/zh/s01_first.md");
    assert_eq!(
        i18n::source_of(&line).unwrap().sha256,
        i18n::sha256_hex(english.as_bytes())
    );
}

#[test]
fn generated_pages_in_chinese() {
    let dir = translated();
    let root = dir.path();
    insta::assert_snapshot!("zh_summary", read(root, "docs/zh/SUMMARY.md"));
    insta::assert_snapshot!("zh_lessons", read(root, "docs/zh/lessons.md"));
    insta::assert_snapshot!("zh_changes_s01", read(root, "docs/zh/changes/s01_first.md"));
    insta::assert_snapshot!(
        "zh_changes_s02",
        read(root, "docs/zh/changes/s02_second.md")
    );
    // The facts are the English pages' facts: the same diff, byte for byte.
    let diff = |text: &str| text[text.find("```diff").unwrap()..].to_string();
    assert_eq!(
        diff(&read(root, "docs/zh/changes/s02_second.md")),
        diff(&read(root, "docs/src/changes/s02_second.md"))
    );
}

#[test]
fn a_missing_translation_is_reported_and_listed_as_a_draft() {
    let dir = translated();
    let root = dir.path();
    fs::remove_file(root.join("docs/zh/s02_second.md")).unwrap();
    assert_eq!(
        problems(root),
        [
            "docs/zh/SUMMARY.md is stale: run `cargo xtask docs`",
            "docs/zh/changes/s02_second.md is stale: run `cargo xtask docs`",
            "docs/zh/lessons.md is stale: run `cargo xtask docs`",
            "docs/zh/s02_second.md is missing: translate docs/src/s02_second.md into it (line 1 records the English file's hash; see docs/TRANSLATING.md), then run `cargo xtask docs`",
        ]
    );
    xtask::docs::generate(root).unwrap();
    // mdBook shows a draft entry without a link; the title is the English one.
    let summary = read(root, "docs/zh/SUMMARY.md");
    assert!(summary.contains("- [2. The second]()\n"), "{summary}");
    assert!(
        summary.contains("- [1. 第一课](s01_first.md)\n"),
        "{summary}"
    );
    // Pages that would link to the missing chapter name it without a link.
    let changes = read(root, "docs/zh/changes/s02_second.md");
    assert!(
        changes.contains("第 2 课：The second对比[第 1 课：第一课](../s01_first.md)"),
        "{changes}"
    );
    assert_eq!(
        problems(root),
        [
            "docs/zh/s02_second.md is missing: translate docs/src/s02_second.md into it (line 1 records the English file's hash; see docs/TRANSLATING.md), then run `cargo xtask docs`"
        ]
    );
}

#[test]
fn a_translation_older_than_its_english_page_is_stale_until_stamped() {
    let dir = translated();
    let root = dir.path();
    let before = i18n::sha256_hex(read(root, "docs/src/s01_first.md").as_bytes());
    edit(
        root,
        "docs/src/s01_first.md",
        "## Try it",
        "A new paragraph.\n\n## Try it",
    );
    let after = i18n::sha256_hex(read(root, "docs/src/s01_first.md").as_bytes());
    assert_ne!(before, after);
    assert_eq!(
        problems(root),
        [format!(
            "docs/zh/s01_first.md is stale: it was translated from docs/src/s01_first.md with sha256:{before}, which is now sha256:{after}: `git log -p docs/src/s01_first.md` shows what changed in English; bring the translation up to date, then run `cargo xtask translation stamp zh s01`"
        )]
    );
    assert_eq!(
        i18n::state(root, &i18n::TRANSLATIONS[0], "s01_first.md").unwrap(),
        State::Stale {
            recorded: before,
            now: after.clone()
        }
    );
    // After the translator has caught up, the stamp records the new hash.
    let page = i18n::resolve_page(root, "s01").unwrap();
    assert_eq!(page, "s01_first.md");
    let line = i18n::stamp(root, &i18n::TRANSLATIONS[0], &page).unwrap();
    assert_eq!(
        line,
        format!("<!-- source: docs/src/s01_first.md sha256:{after} -->")
    );
    assert_eq!(problems(root), Vec::<String>::new());
    // Only line 1 changed.
    assert_eq!(
        read(root, "docs/zh/s01_first.md"),
        format!("{line}\n\n{FIRST}")
    );
}

#[test]
fn line_1_must_name_the_english_page_and_its_hash() {
    let dir = translated();
    let root = dir.path();
    let stamp_hint = |page: &str, lesson: &str| {
        format!(
            "line 1 must be `<!-- source: docs/src/{page} sha256:<sha256sum of docs/src/{page}> -->`; once the translation matches the English page, `cargo xtask translation stamp zh {lesson}` writes it"
        )
    };
    write(root, "docs/zh/s01_first.md", FIRST);
    let text = read(root, "docs/zh/s02_second.md");
    let body = text.split_once('\n').unwrap().1;
    write(
        root,
        "docs/zh/s02_second.md",
        &format!(
            "<!-- source: docs/src/s01_first.md sha256:{} -->\n{body}",
            "0".repeat(64)
        ),
    );
    translate(root, "introduction.md", INTRODUCTION);
    edit(root, "docs/zh/introduction.md", " sha256:", " sha256:abc");
    assert_eq!(
        problems(root),
        [
            format!(
                "docs/zh/introduction.md:1: line 1 has `sha256:abc{}`, which is not 64 hex digits: {}",
                i18n::sha256_hex(read(root, "docs/src/introduction.md").as_bytes()),
                stamp_hint("introduction.md", "introduction")
            ),
            format!(
                "docs/zh/s01_first.md:1: line 1 is \"# 1. 第一课 {{#1-the-first}}\", not `<!-- source: docs/src/<file>.md sha256:<hex> -->`: {}",
                stamp_hint("s01_first.md", "s01")
            ),
            format!(
                "docs/zh/s02_second.md:1: line 1 names docs/src/s01_first.md as the source, but the page translates docs/src/s02_second.md: {}",
                stamp_hint("s02_second.md", "s02")
            ),
        ]
    );
    // Stamping a page without a source line adds one.
    i18n::stamp(root, &i18n::TRANSLATIONS[0], "s01_first.md").unwrap();
    assert!(read(root, "docs/zh/s01_first.md").ends_with(&format!(" -->\n\n{FIRST}")));
}

#[test]
fn a_translation_keeps_the_includes_code_and_heading_ids_of_its_english_page() {
    let dir = translated();
    let root = dir.path();
    // An include of the whole file instead of the anchor: it resolves, but
    // it is not what the English page shows.
    edit(
        root,
        "docs/zh/s01_first.md",
        "hooks.rs:tools}}",
        "hooks.rs}}",
    );
    // A translated comment in a code block.
    edit(root, "docs/zh/s02_second.md", "-p hi", "-p 你好");
    // A heading without the English id: the link from the introduction,
    // checked in the Chinese tree, no longer lands.
    edit(
        root,
        "docs/zh/s01_first.md",
        "## 动手试试 {#try-it}",
        "## 动手试试",
    );
    assert_eq!(
        problems(root),
        [
            "docs/zh/introduction.md:5: link to s01_first.md#try-it: docs/zh/s01_first.md has no heading with id `try-it`: link to an existing heading (ids are the heading text, lower case, spaces as `-`)",
            "docs/zh/s01_first.md:8: includes ../../crates/s01_first/src/hooks.rs where docs/src/s01_first.md:6 includes ../../crates/s01_first/src/hooks.rs:tools: copy the directive verbatim",
            "docs/zh/s01_first.md:7: this code block differs from the one at docs/src/s01_first.md:5: code blocks show what the programs really say, so they are copied verbatim",
            "docs/zh/s01_first.md has no heading with id `try-it`, which docs/src/s01_first.md has: end each translated heading with the English heading's id, `## 标题 {#the-id}`, so links and the language switcher land on the same section",
            "docs/zh/s02_second.md:7: this code block differs from the one at docs/src/s02_second.md:5: code blocks show what the programs really say, so they are copied verbatim",
        ]
    );
}

#[test]
fn a_translation_has_as_many_includes_and_code_blocks_as_its_english_page() {
    let dir = translated();
    let root = dir.path();
    edit(
        root,
        "docs/zh/s01_first.md",
        "## 动手试试",
        "```rust\n{{#include ../../crates/s01_first/src/main.rs}}\n```\n\n## 动手试试",
    );
    assert_eq!(
        problems(root),
        [
            "docs/zh/s01_first.md has 2 {{#include}} directive(s) where docs/src/s01_first.md has 1: copy every directive of the English page, verbatim",
            "docs/zh/s01_first.md has 3 code block(s) where docs/src/s01_first.md has 2: keep every code block of the English page, verbatim",
        ]
    );
}

#[test]
fn translated_pages_are_checked_like_english_ones() {
    let dir = translated();
    let root = dir.path();
    edit(
        root,
        "docs/zh/s02_second.md",
        "参见",
        "[a](../src/s01_first.md) [b](s01_first.md#nowhere) 参见",
    );
    edit(
        root,
        "docs/zh/s01_first.md",
        "hooks.rs:tools}}",
        "hooks.rs:tool}}",
    );
    // English counterparts change with the translation, so both are current.
    edit(
        root,
        "docs/src/s01_first.md",
        "hooks.rs:tools}}",
        "hooks.rs:tool}}",
    );
    i18n::stamp(root, &i18n::TRANSLATIONS[0], "s01_first.md").unwrap();
    assert_eq!(
        problems(root),
        [
            "docs/src/s01_first.md:6: crates/s01_first/src/hooks.rs has no `ANCHOR: tool`: put `// ANCHOR: tool` and `// ANCHOR_END: tool` around the code to show, or fix the name",
            "docs/zh/s01_first.md:8: crates/s01_first/src/hooks.rs has no `ANCHOR: tool`: put `// ANCHOR: tool` and `// ANCHOR_END: tool` around the code to show, or fix the name",
            "docs/zh/s02_second.md:12: link to ../src/s01_first.md: docs/src/s01_first.md is outside docs/zh, so the built book does not have it: show code with {{#include}}, or link to a page of the book",
            "docs/zh/s02_second.md:12: link to s01_first.md#nowhere: docs/zh/s01_first.md has no heading with id `nowhere`: link to an existing heading (ids are the heading text, lower case, spaces as `-`)",
        ]
    );
}

#[test]
fn an_edition_has_its_own_pages_and_none_that_translate_nothing() {
    let dir = translated();
    let root = dir.path();
    fs::remove_file(root.join("docs/zh/glossary.md")).unwrap();
    write(root, "docs/zh/notes.md", "# 笔记\n");
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "docs/zh/glossary.md is missing: every 中文 edition has it (it is the edition's own page, with no English source)",
            "docs/zh/notes.md translates no page of docs/src (there is no docs/src/notes.md): name it after the English page it translates, or remove it",
        ]
    );
}

#[test]
fn the_switcher_offers_every_edition() {
    let dir = translated();
    let root = dir.path();
    edit(
        root,
        "docs/i18n/switcher.js",
        "  { lang: 'zh-CN', dir: 'zh/', label: '中文' },\n",
        "",
    );
    assert_eq!(
        problems(root),
        [
            "docs/i18n/switcher.js does not offer the 中文 edition: add `{ lang: 'zh-CN', dir: 'zh/', label: '中文' }` to its EDITIONS"
        ]
    );
    fs::remove_file(root.join("docs/i18n/switcher.js")).unwrap();
    assert_eq!(
        problems(root),
        [
            "docs/i18n/switcher.js is missing: every page of every edition loads it (docs/book.toml's additional-js) to switch languages"
        ]
    );
}

#[test]
fn a_changed_translated_title_makes_the_generated_pages_stale() {
    let dir = translated();
    let root = dir.path();
    edit(root, "docs/zh/s01_first.md", "# 1. 第一课", "# 1. 头一课");
    assert_eq!(
        problems(root),
        [
            "docs/zh/SUMMARY.md is stale: run `cargo xtask docs`",
            "docs/zh/changes/s01_first.md is stale: run `cargo xtask docs`",
            "docs/zh/changes/s02_second.md is stale: run `cargo xtask docs`",
            "docs/zh/lessons.md is stale: run `cargo xtask docs`",
        ]
    );
    xtask::docs::generate(root).unwrap();
    assert!(read(root, "docs/zh/SUMMARY.md").contains("- [1. 头一课](s01_first.md)"));
    assert_eq!(problems(root), Vec::<String>::new());
}

#[test]
fn a_variant_the_glossary_forbids_is_reported_with_its_line_and_replacement() {
    let dir = translated();
    let root = dir.path();
    edit(
        root,
        "docs/zh/glossary.md",
        "| lesson | 课 |\n",
        "| lesson | 课 |\n\n## 不使用的写法 {#forbidden}\n\n| 不用 | 改用 | 原因 |\n| --- | --- | --- |\n\
         | `简介` | `引言` | 本书统一 |\n| `向后复制` | `逐课复制` | 读者看不懂 |\n",
    );
    // Code shows what the program prints: a variant in a code span is not
    // a use (nor in a code block; `terms`' unit tests show that, since a
    // code block here would have to be in the English page too).
    edit(
        root,
        "docs/zh/s02_second.md",
        "参见",
        "`简介` 和 ``向后复制`` 都是代码。\n\n简介里向后复制，又是简介。\n\n参见",
    );
    assert_eq!(
        problems(root),
        [
            "docs/zh/introduction.md:3: 简介 (use 引言: 本书统一)",
            "docs/zh/s02_second.md:14: 简介 (use 引言: 本书统一)",
            "docs/zh/s02_second.md:14: 简介 (use 引言: 本书统一)",
            "docs/zh/s02_second.md:14: 向后复制 (use 逐课复制: 读者看不懂)",
        ]
    );
    // With the words the glossary asks for, the edition passes again.
    edit(root, "docs/zh/introduction.md", "# 简介", "# 引言");
    edit(
        root,
        "docs/zh/s02_second.md",
        "简介里向后复制，又是简介。",
        "引言里逐课复制，又是引言。",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(problems(root), Vec::<String>::new());
}

#[test]
fn a_glossary_without_the_forbidden_section_forbids_nothing() {
    let dir = translated();
    let root = dir.path();
    // The fixture's introduction is titled 简介, and its glossary has only
    // a terms table: nothing to report.
    assert!(read(root, "docs/zh/introduction.md").contains("简介"));
    edit(
        root,
        "docs/zh/glossary.md",
        "| lesson | 课 |\n",
        "| lesson | 课 |\n| `简介` | `引言` | 本书统一 |\n",
    );
    assert_eq!(problems(root), Vec::<String>::new());
}
