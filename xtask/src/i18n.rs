//! The book in more than one language: the editions, the words of the
//! generated pages in each, and the source line that ties a translated page
//! to the English text it was made from.
//!
//! The English book is `docs/src/`. A translation is an edition with its own
//! directory at the same depth, `docs/zh/` and `docs/ja/`, so that
//! `{{#include ../../crates/…}}` resolves unchanged from every edition. An
//! edition is part of the book when its directory exists (the repository's
//! own test, `tests/it/book.rs`, insists that every edition below does).
//!
//! A translated page written by hand starts with one line naming its
//! source and that file's SHA-256 when the translation was made:
//!
//! ```text
//! <!-- source: docs/src/s05_todo_write.md sha256:9f2c… -->
//! ```
//!
//! When the English page changes, its hash no longer matches and
//! `cargo xtask check` reports the translation as stale; after the
//! translation has been brought up to date, `cargo xtask translation stamp
//! zh s05` records the new hash. Pages an edition has of its own (its
//! glossary) have no English source and no such line. The generated pages
//! (table of contents, lessons index, "what changed" pages) are rendered
//! for every edition from [`Phrases`], so they are never stale.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::lessons;

/// Where the book's sources are, relative to the repository root: the
/// English edition, the one every other edition translates.
pub const BOOK_SRC: &str = "docs/src";

/// One language of the book.
#[derive(Debug)]
pub struct Edition {
    /// The directory under `docs/` with the edition's pages (`src` for
    /// English, else the language code used on the command line).
    pub dir: &'static str,
    /// The language tag mdBook writes into `<html lang>`; the language
    /// switcher (`docs/i18n/switcher.js`) finds the current edition by it.
    pub lang: &'static str,
    /// How the switcher names the language, in the language itself.
    pub label: &'static str,
    /// The book's title in this edition.
    pub title: &'static str,
    /// The surrounding text of the generated pages.
    pub phrases: &'static Phrases,
    /// Hand-written pages of this edition that translate no English page.
    pub own_pages: &'static [&'static str],
}

impl Edition {
    /// The edition's page directory, relative to the repository root.
    pub fn src(&self) -> String {
        format!("docs/{}", self.dir)
    }

    /// Whether this is the English original.
    pub fn is_english(&self) -> bool {
        self.dir == ENGLISH.dir
    }
}

/// The English book: the original every translation is made from.
pub const ENGLISH: Edition = Edition {
    dir: "src",
    lang: "en",
    label: "English",
    title: "Build a coding agent in Rust",
    phrases: &EN,
    own_pages: &[],
};

/// The translations, in the order the switcher lists them after English.
pub const TRANSLATIONS: [Edition; 2] = [
    Edition {
        dir: "zh",
        lang: "zh-CN",
        label: "中文",
        title: "用 Rust 构建编程智能体",
        phrases: &ZH,
        own_pages: &["glossary.md"],
    },
    Edition {
        dir: "ja",
        lang: "ja",
        label: "日本語",
        title: "Rust で作るコーディングエージェント",
        phrases: &JA,
        own_pages: &["glossary.md"],
    },
];

/// English, then every translation whose directory exists at `root`.
pub fn editions(root: &Path) -> Vec<&'static Edition> {
    std::iter::once(&ENGLISH)
        .chain(
            TRANSLATIONS
                .iter()
                .filter(|edition| root.join(edition.src()).is_dir()),
        )
        .collect()
}

/// The translation named on the command line (`zh`, `ja`, or its tag).
pub fn translation(name: &str) -> Result<&'static Edition> {
    TRANSLATIONS
        .iter()
        .find(|e| e.dir == name || e.lang.eq_ignore_ascii_case(name))
        .with_context(|| {
            let known: Vec<&str> = TRANSLATIONS.iter().map(|e| e.dir).collect();
            format!(
                "there is no translation {name:?}: use one of {}",
                known.join(", ")
            )
        })
}

/// The words around the facts on the generated pages. `{name}` is filled in
/// by the generator (see [`fill`]); `{#id}` after a heading is mdBook's
/// explicit id, which translations give every heading so that a link, or
/// the language switcher, lands on the same section in every edition.
/// Identifiers, tool names, numbers, descriptions as the model reads them
/// and the diffs themselves stay as they are.
#[derive(Debug)]
pub struct Phrases {
    pub summary: &'static str,
    pub introduction: &'static str,
    pub lessons: &'static str,
    pub what_changed: &'static str,
    /// The lessons index: its heading, its paragraph and its table's header.
    pub lessons_title: &'static str,
    pub lessons_intro: &'static str,
    pub lessons_table: &'static str,
    /// A chapter's motto in the lessons index.
    pub motto: &'static str,
    pub tools_not_recorded: &'static str,
    /// `{count}` tools of which `{names}` are new.
    pub tools_with_new: &'static str,
    pub first_lesson: &'static str,
    /// A reference to a lesson, at the start of a sentence and inside one.
    pub lesson_ref: &'static str,
    pub lesson_ref_inline: &'static str,
    pub first_title: &'static str,
    pub first_intro: &'static str,
    pub changes_title: &'static str,
    pub changes_intro: &'static str,
    pub tools_heading: &'static str,
    pub items_heading: &'static str,
    pub files_heading: &'static str,
    pub diff_heading: &'static str,
    pub no_tools_recorded: &'static str,
    pub previous_tools_not_recorded: &'static str,
    pub no_tools: &'static str,
    pub tool_count: &'static str,
    pub new_tool: &'static str,
    pub changed_tool: &'static str,
    /// Between a name and its description: `**`bash`**: Run a command.`
    pub colon: &'static str,
    /// The facts about an input: ` ({facts})`, joined by `facts_separator`.
    pub facts: &'static str,
    pub facts_separator: &'static str,
    pub required: &'static str,
    pub unchanged_tools: &'static str,
    pub removed_tools: &'static str,
    pub no_item_changed: &'static str,
    /// `**{heading}** ({count}):` over a list of added, changed or removed items.
    pub item_group: &'static str,
    pub added: &'static str,
    pub changed: &'static str,
    pub removed: &'static str,
    pub none: &'static str,
    pub first_files_table: &'static str,
    pub binary: &'static str,
    pub first_lines: &'static str,
    pub no_file_differs: &'static str,
    pub changes_files_table: &'static str,
    pub file_added: &'static str,
    pub file_removed: &'static str,
    pub file_changed: &'static str,
    pub changes_lines: &'static str,
    pub empty_diff: &'static str,
}

pub const EN: Phrases = Phrases {
    summary: "Summary",
    introduction: "Introduction",
    lessons: "Lessons",
    what_changed: "What changed",
    lessons_title: "Lessons",
    lessons_intro: "Each lesson is a crate, `crates/sNN_name`, that adds one mechanism to the \
                    lesson before it. Run one with `cargo run -p sNN_name`; see what it added \
                    with `cargo xtask diff sNN`.",
    lessons_table: "| # | chapter | mechanism | motto | tools | lines of Rust | what changed |\n\
                    | ---: | --- | --- | --- | --- | ---: | --- |",
    motto: "*\"{motto}\"*",
    tools_not_recorded: "not recorded",
    tools_with_new: "{count}, new: {names}",
    first_lesson: "first lesson",
    lesson_ref: "Lesson {n}: {title}",
    lesson_ref_inline: "lesson {n}: {title}",
    first_title: "What lesson {n} starts with",
    first_intro: "{lesson} is where the chain of lessons starts, so there is \
                  no diff here: this page lists what the crate `{crate}` has. Every later lesson's \
                  page shows what that lesson added.",
    changes_title: "What changed in lesson {n}",
    changes_intro: "{lesson} against {previous}: {files} file{s_files} changed, \
                    {added} line{s_added} added, {removed} removed. In a terminal, \
                    `cargo xtask diff {id}` shows the same diff. The crate name reads `{placeholder}` on \
                    both sides, and lines that only carry book anchors are left out.",
    tools_heading: "Tools",
    items_heading: "Types and functions",
    files_heading: "Files",
    diff_heading: "The diff",
    no_tools_recorded: "The tool list is not recorded: `{snapshot}` {why}. `{command}` writes it.",
    previous_tools_not_recorded: "Lesson {n}'s tool list is not recorded, so no tool is marked new or changed.",
    no_tools: "The lesson gives the model no tools.",
    tool_count: "The model can call {n} tool{s}.",
    new_tool: " (new)",
    changed_tool: " (changed)",
    colon: ": ",
    facts: " ({facts})",
    facts_separator: ", ",
    required: "required",
    unchanged_tools: "Unchanged: {names}.",
    removed_tools: "Removed: {names}.",
    no_item_changed: "No item was added, changed or removed.",
    item_group: "**{heading}** ({count}):",
    added: "Added",
    changed: "Changed",
    removed: "Removed",
    none: "None.",
    first_files_table: "| file | lines |\n| --- | ---: |",
    binary: "binary",
    first_lines: "Lines of Rust under `src/` (not counting blank lines and anchors): {n}.",
    no_file_differs: "No file differs.",
    changes_files_table: "| file | | added | removed |\n| --- | --- | ---: | ---: |",
    file_added: "added",
    file_removed: "removed",
    file_changed: "changed",
    changes_lines: "Lines of Rust under `src/` (not counting blank lines and anchors): {before} → {after}.",
    empty_diff: "Empty.",
};

pub const ZH: Phrases = Phrases {
    summary: "目录",
    introduction: "引言",
    lessons: "课程一览",
    what_changed: "改动了什么",
    lessons_title: "课程一览 {#lessons}",
    lessons_intro: "每一课都是一个 crate（`crates/sNN_name`），在前一课的基础上加入一个机制。\
                    用 `cargo run -p sNN_name` 运行某一课；用 `cargo xtask diff sNN` 查看它加入了什么。",
    lessons_table: "| # | 章 | 机制 | 格言 | 工具 | Rust 代码行数 | 改动了什么 |\n\
                    | ---: | --- | --- | --- | --- | ---: | --- |",
    motto: "*“{motto}”*",
    tools_not_recorded: "未记录",
    tools_with_new: "{count}，新增：{names}",
    first_lesson: "第一课",
    lesson_ref: "第 {n} 课：{title}",
    lesson_ref_inline: "第 {n} 课：{title}",
    first_title: "第 {n} 课的起点 {#what-lesson-{n}-starts-with}",
    first_intro: "{lesson}是整条课程链的起点，所以这里没有 diff：本页列出 crate `{crate}` 包含的内容。\
                  之后每一课的页面都展示那一课加入了什么。",
    changes_title: "第 {n} 课改动了什么 {#what-changed-in-lesson-{n}}",
    changes_intro: "{lesson}对比{previous}：改动了 {files} 个文件，新增 {added} 行，删除 {removed} 行。\
                    在终端里，`cargo xtask diff {id}` 显示同样的 diff。两边的 crate 名都写作 \
                    `{placeholder}`，只带书籍锚点的行不计入。",
    tools_heading: "工具 {#tools}",
    items_heading: "类型与函数 {#types-and-functions}",
    files_heading: "文件 {#files}",
    diff_heading: "diff {#the-diff}",
    no_tools_recorded: "工具列表没有记录：`{snapshot}` {why}。`{command}` 会写入它。",
    previous_tools_not_recorded: "第 {n} 课的工具列表没有记录，所以没有工具被标为新增或修改。",
    no_tools: "这一课不给模型任何工具。",
    tool_count: "模型可以调用 {n} 个工具。",
    new_tool: "（新增）",
    changed_tool: "（修改）",
    colon: "：",
    facts: "（{facts}）",
    facts_separator: "，",
    required: "必填",
    unchanged_tools: "未变：{names}。",
    removed_tools: "移除：{names}。",
    no_item_changed: "没有新增、修改或删除任何条目。",
    item_group: "**{heading}**（{count}）：",
    added: "新增",
    changed: "修改",
    removed: "删除",
    none: "无。",
    first_files_table: "| 文件 | 行数 |\n| --- | ---: |",
    binary: "二进制",
    first_lines: "`src/` 下的 Rust 代码行数（不计空行和锚点行）：{n}。",
    no_file_differs: "没有文件不同。",
    changes_files_table: "| 文件 | | 新增 | 删除 |\n| --- | --- | ---: | ---: |",
    file_added: "新增",
    file_removed: "删除",
    file_changed: "修改",
    changes_lines: "`src/` 下的 Rust 代码行数（不计空行和锚点行）：{before} → {after}。",
    empty_diff: "空。",
};

pub const JA: Phrases = Phrases {
    summary: "目次",
    introduction: "はじめに",
    lessons: "レッスン一覧",
    what_changed: "変更点",
    lessons_title: "レッスン一覧 {#lessons}",
    lessons_intro: "各レッスンはひとつのクレート（`crates/sNN_name`）で、前のレッスンに仕組みをひとつ加えます。\
                    `cargo run -p sNN_name` で実行でき、`cargo xtask diff sNN` で何が加わったかを確認できます。",
    lessons_table: "| # | 章 | 仕組み | モットー | ツール | Rust の行数 | 変更点 |\n\
                    | ---: | --- | --- | --- | --- | ---: | --- |",
    motto: "*「{motto}」*",
    tools_not_recorded: "記録なし",
    tools_with_new: "{count}、新規：{names}",
    first_lesson: "最初のレッスン",
    lesson_ref: "レッスン {n}「{title}」",
    lesson_ref_inline: "レッスン {n}「{title}」",
    first_title: "レッスン {n} の出発点 {#what-lesson-{n}-starts-with}",
    first_intro: "{lesson}はレッスンの連なりの出発点なので、ここに diff はありません。このページには\
                  クレート `{crate}` が持つものを挙げます。以降の各レッスンのページには、そのレッスンで加わったものが載っています。",
    changes_title: "レッスン {n} の変更点 {#what-changed-in-lesson-{n}}",
    changes_intro: "{lesson}と{previous}の比較：{files} ファイルが変更され、{added} 行追加、{removed} 行削除されています。\
                    ターミナルでは `cargo xtask diff {id}` で同じ diff を表示できます。クレート名は両側とも \
                    `{placeholder}` と表記し、本のアンカーだけを含む行は除いています。",
    tools_heading: "ツール {#tools}",
    items_heading: "型と関数 {#types-and-functions}",
    files_heading: "ファイル {#files}",
    diff_heading: "diff {#the-diff}",
    no_tools_recorded: "ツール一覧が記録されていません：`{snapshot}` {why}。`{command}` で記録されます。",
    previous_tools_not_recorded: "レッスン {n} のツール一覧が記録されていないため、新規・変更の印は付けていません。",
    no_tools: "このレッスンはモデルにツールを渡しません。",
    tool_count: "モデルが呼び出せるツールは {n} 個です。",
    new_tool: "（新規）",
    changed_tool: "（変更）",
    colon: "：",
    facts: "（{facts}）",
    facts_separator: "、",
    required: "必須",
    unchanged_tools: "変更なし：{names}。",
    removed_tools: "削除：{names}。",
    no_item_changed: "追加・変更・削除された項目はありません。",
    item_group: "**{heading}**（{count}）：",
    added: "追加",
    changed: "変更",
    removed: "削除",
    none: "なし。",
    first_files_table: "| ファイル | 行数 |\n| --- | ---: |",
    binary: "バイナリ",
    first_lines: "`src/` 以下の Rust の行数（空行とアンカー行を除く）：{n}。",
    no_file_differs: "異なるファイルはありません。",
    changes_files_table: "| ファイル | | 追加 | 削除 |\n| --- | --- | ---: | ---: |",
    file_added: "追加",
    file_removed: "削除",
    file_changed: "変更",
    changes_lines: "`src/` 以下の Rust の行数（空行とアンカー行を除く）：{before} → {after}。",
    empty_diff: "空です。",
};

impl Phrases {
    /// The word for a file's status in the "what changed" table
    /// ([`crate::diff::Status::word`]).
    pub fn status(&self, word: &str) -> &'static str {
        match word {
            "added" => self.file_added,
            "removed" => self.file_removed,
            _ => self.file_changed,
        }
    }
}

/// `template` with each `{name}` replaced by its value from `values`, in
/// one pass (a value is never read as a template). Anything else in braces,
/// such as a heading's `{#id}`, stays as written.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(after.len());
        let value = (name_len > 0 && after[name_len..].starts_with('}'))
            .then(|| values.iter().find(|(key, _)| *key == &after[..name_len]))
            .flatten();
        match value {
            Some((_, value)) => {
                out.push_str(value);
                rest = &after[name_len + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// What line 1 of a translated page says about its English source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Repository-relative: `docs/src/s05_todo_write.md`.
    pub file: String,
    /// 64 lower-case hex digits.
    pub sha256: String,
}

const HEADER_OPEN: &str = "<!-- source: ";
const HEADER_CLOSE: &str = " -->";

impl Source {
    /// The header line, without its line break.
    pub fn line(&self) -> String {
        format!(
            "{HEADER_OPEN}{} sha256:{}{HEADER_CLOSE}",
            self.file, self.sha256
        )
    }
}

/// Reads line 1 of a translated page, or says what is wrong with it.
pub fn source_of(text: &str) -> Result<Source, String> {
    let first = text.lines().next().unwrap_or("");
    let Some(inner) = first
        .strip_prefix(HEADER_OPEN)
        .and_then(|rest| rest.strip_suffix(HEADER_CLOSE))
    else {
        return Err(format!(
            "line 1 is {:?}, not `{HEADER_OPEN}docs/src/<file>.md sha256:<hex>{HEADER_CLOSE}`",
            shorten(first)
        ));
    };
    let Some((file, hash)) = inner.split_once(" sha256:") else {
        return Err("line 1 names no `sha256:` of the English file".into());
    };
    if hash.len() != 64 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "line 1 has `sha256:{hash}`, which is not 64 hex digits"
        ));
    }
    Ok(Source {
        file: file.trim().to_string(),
        sha256: hash.to_ascii_lowercase(),
    })
}

fn shorten(line: &str) -> String {
    match line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// The SHA-256 of `bytes` as 64 lower-case hex digits, as `sha256sum`
/// prints it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Where a translated page stands against its English source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Made from the English page as it is now.
    Current,
    /// Made from an earlier version of the English page.
    Stale { recorded: String, now: String },
    /// No translation yet.
    Missing,
    /// Line 1 is not a source line, or names another file.
    BadHeader(String),
}

/// The hand-written pages of the English book, as file names relative to
/// `docs/src` (`introduction.md`, `s05_todo_write.md`), sorted: everything
/// but the generated pages.
pub fn english_pages(root: &Path) -> Result<Vec<String>> {
    let src = root.join(BOOK_SRC);
    let mut out = Vec::new();
    for path in lessons::files_with_extension(&src, "md")? {
        let relative = lessons::relative_path(&src, &path);
        if !is_generated(&relative) {
            out.push(relative);
        }
    }
    out.sort();
    Ok(out)
}

/// Whether a page (relative to its edition's directory) is written by
/// `cargo xtask docs` rather than by hand.
pub fn is_generated(relative: &str) -> bool {
    matches!(relative, "SUMMARY.md" | "lessons.md") || relative.starts_with("changes/")
}

/// The state of `edition`'s translation of the English page `page`.
pub fn state(root: &Path, edition: &Edition, page: &str) -> Result<State> {
    let english_path = format!("{BOOK_SRC}/{page}");
    let english = std::fs::read(root.join(&english_path))
        .with_context(|| format!("reading {english_path}"))?;
    let Ok(text) = std::fs::read_to_string(root.join(edition.src()).join(page)) else {
        return Ok(State::Missing);
    };
    let source = match source_of(&text) {
        Ok(source) => source,
        Err(why) => return Ok(State::BadHeader(why)),
    };
    if source.file != english_path {
        return Ok(State::BadHeader(format!(
            "line 1 names {} as the source, but the page translates {english_path}",
            source.file
        )));
    }
    let now = sha256_hex(&english);
    Ok(if source.sha256 == now {
        State::Current
    } else {
        State::Stale {
            recorded: source.sha256,
            now,
        }
    })
}

/// The English page a command-line name means: a lesson (`s05`, `5`,
/// `s05_todo_write`) or a page of `docs/src` (`introduction`,
/// `benchmarks.md`).
pub fn resolve_page(root: &Path, name: &str) -> Result<String> {
    let file = if name.ends_with(".md") {
        name.to_string()
    } else {
        format!("{name}.md")
    };
    if !is_generated(&file) && root.join(BOOK_SRC).join(&file).is_file() {
        return Ok(file);
    }
    let all = lessons::discover(root)?;
    match lessons::find(&all, name) {
        Ok(lesson) => Ok(lesson.chapter_file()),
        Err(_) => bail!(
            "{name} is neither a lesson nor a hand-written page of {BOOK_SRC}: use a lesson (s05) or one of {}",
            english_pages(root)?.join(", ")
        ),
    }
}

/// Records that `edition`'s translation of `page` matches the English page
/// as it is now: line 1 is rewritten with the current hash (or added, for a
/// page that has none yet). Returns the new line.
pub fn stamp(root: &Path, edition: &Edition, page: &str) -> Result<String> {
    let english_path = format!("{BOOK_SRC}/{page}");
    let english = std::fs::read(root.join(&english_path))
        .with_context(|| format!("reading {english_path}"))?;
    let path = root.join(edition.src()).join(page);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {}/{page}: there is no translation to stamp yet",
            edition.src()
        )
    })?;
    let line = Source {
        file: english_path,
        sha256: sha256_hex(&english),
    }
    .line();
    let body = if text.starts_with(HEADER_OPEN) {
        text.split_once('\n').map(|(_, rest)| rest).unwrap_or("")
    } else {
        // A page without a source line gets one, and the blank line after it.
        &format!("\n{text}")
    };
    std::fs::write(&path, format!("{line}\n{body}"))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(line)
}

/// A table of every translated page's state, edition by edition, for
/// `cargo xtask translation status`.
pub fn status(root: &Path) -> Result<String> {
    let pages = english_pages(root)?;
    let mut out = String::new();
    for edition in TRANSLATIONS.iter() {
        let _ = writeln!(
            out,
            "{} ({}, {}):",
            edition.label,
            edition.lang,
            edition.src()
        );
        if !root.join(edition.src()).is_dir() {
            let _ = writeln!(out, "  not started: {} does not exist", edition.src());
            continue;
        }
        let mut counts = [0usize; 4];
        for page in &pages {
            let (index, word) = match state(root, edition, page)? {
                State::Current => (0, "current".to_string()),
                State::Stale { recorded, .. } => (
                    1,
                    format!(
                        "STALE    made from sha256:{}…; `git log -p {BOOK_SRC}/{page}` shows the English changes",
                        &recorded[..12]
                    ),
                ),
                State::Missing => (2, "MISSING".to_string()),
                State::BadHeader(why) => (3, format!("BAD LINE 1  {why}")),
            };
            counts[index] += 1;
            let _ = writeln!(out, "  {page:<28} {word}");
        }
        for own in edition.own_pages {
            let there = root.join(edition.src()).join(own).is_file();
            let word = if there {
                "own page"
            } else {
                "MISSING own page"
            };
            let _ = writeln!(out, "  {own:<28} {word}");
        }
        let _ = writeln!(
            out,
            "  {} current, {} stale, {} missing, {} with a bad line 1, of {}\n",
            counts[0],
            counts[1],
            counts[2],
            counts[3],
            pages.len()
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_names_once_and_leaves_heading_ids() {
        assert_eq!(
            fill(
                "{a} and {b}{s} {#id-{n}} {x} {",
                &[("a", "{b}"), ("b", "B"), ("s", "s"), ("n", "1")]
            ),
            "{b} and Bs {#id-1} {x} {"
        );
    }

    #[test]
    fn the_source_line_is_read_and_written_alike() {
        let source = Source {
            file: "docs/src/a.md".into(),
            sha256: "ab".repeat(32),
        };
        let text = format!("{}\n\n# A\n", source.line());
        assert_eq!(source_of(&text), Ok(source));
        assert!(
            source_of("# A\n")
                .unwrap_err()
                .contains("line 1 is \"# A\"")
        );
        assert!(
            source_of("<!-- source: docs/src/a.md sha256:abc -->")
                .unwrap_err()
                .contains("not 64 hex digits")
        );
        // `printf '' | sha256sum`
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
