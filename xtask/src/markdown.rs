//! What the checks need from the book's markdown: mdBook `{{#include}}`
//! links, ordinary links, heading ids, shell code blocks, the chapter
//! motto, and the bullets of a list with their code spans. Links, headings
//! and code blocks come from pulldown-cmark (the parser mdBook uses), so
//! code spans and code blocks are not mistaken for links; `{{#include}}` is
//! found in the raw text, as mdBook does, before any markdown parsing, and
//! so are bullets (line by line, outside fenced code).

use std::collections::HashSet;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The options mdBook parses with, as far as links and headings care.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// 1-based line of a byte offset.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Which part of a file an include takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    All,
    Anchor(String),
    /// 1-based, inclusive; either end may be open.
    Lines(Option<usize>, Option<usize>),
}

/// One `{{#include path[:selector]}}` (or `rustdoc_include`, `playground`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Include {
    pub line: usize,
    pub path: String,
    pub selector: Selector,
}

/// Every mdBook file link in `text`, skipping escaped ones (`\{{#…}}`).
pub fn includes(text: &str) -> Vec<Include> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(found) = text[rest..].find("{{") {
        let start = rest + found;
        rest = start + 2;
        if text[..start].ends_with('\\') {
            continue;
        }
        let Some(len) = text[start..].find("}}") else {
            break;
        };
        let inner = text[start + 2..start + len].trim();
        let Some(inner) = inner.strip_prefix('#') else {
            continue;
        };
        let (kind, target) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
        if !matches!(kind, "include" | "rustdoc_include" | "playground") {
            continue;
        }
        // `playground` may carry attributes after the path.
        let target = target.split_whitespace().next().unwrap_or("");
        let (path, selector) = match target.split_once(':') {
            None => (target, Selector::All),
            Some((path, spec)) => (path, selector(spec)),
        };
        out.push(Include {
            line: line_at(text, start),
            path: path.to_string(),
            selector,
        });
        rest = start + len + 2;
    }
    out
}

/// mdBook's reading of what follows the path: a line range (`10`, `10:20`,
/// `:20`, `10:`) or else an anchor name.
fn selector(spec: &str) -> Selector {
    let mut parts = spec.splitn(2, ':');
    let first = parts.next().unwrap_or("");
    let second = parts.next();
    let start = match first.parse::<usize>() {
        Ok(n) => Some(n),
        Err(_) if first.is_empty() => None,
        Err(_) => return Selector::Anchor(first.to_string()),
    };
    match second {
        // A single number is that one line.
        None => Selector::Lines(start, start),
        Some(end) => Selector::Lines(start, end.parse().ok()),
    }
}

/// One link or image destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub line: usize,
    pub dest: String,
}

/// Every link and image destination, as the markdown parser sees them.
pub fn links(text: &str) -> Vec<Link> {
    Parser::new_ext(text, options())
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => Some(Link {
                line: line_at(text, range.start),
                dest: dest_url.to_string(),
            }),
            _ => None,
        })
        .collect()
}

/// The ids mdBook gives the headings of a page (`#what-changed`), including
/// `{#custom}` ids and the `-1`, `-2` suffixes of repeated headings.
pub fn heading_ids(text: &str) -> HashSet<String> {
    let mut ids = HashSet::new();
    let mut heading: Option<(Option<String>, String)> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((id.map(|id| id.to_string()), String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, content)) = heading.as_mut() {
                    content.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((explicit, content)) = heading.take() {
                    let id = explicit.unwrap_or_else(|| id_from_content(&content));
                    unique_id(&id, &mut ids);
                }
            }
            _ => {}
        }
    }
    ids
}

/// mdBook's `id_from_content` (mdbook-html, 0.5).
fn id_from_content(content: &str) -> String {
    content
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|ch| {
            if ch.is_alphanumeric() || ch == '_' || ch == '-' {
                Some(ch)
            } else if ch.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// mdBook's `unique_id`: a repeated id gets `-1`, `-2`, ….
fn unique_id(id: &str, used: &mut HashSet<String>) {
    if used.insert(id.to_string()) {
        return;
    }
    for counter in 1.. {
        if used.insert(format!("{id}-{counter}")) {
            return;
        }
    }
}

/// The first level-one heading's text.
pub fn title(text: &str) -> Option<String> {
    let mut inside = false;
    let mut content = String::new();
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::Heading {
                level: HeadingLevel::H1,
                ..
            }) => inside = true,
            Event::Text(t) | Event::Code(t) if inside => content.push_str(&t),
            Event::End(TagEnd::Heading(HeadingLevel::H1)) if inside => return Some(content),
            _ => {}
        }
    }
    None
}

/// A fenced code block of shell commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellBlock {
    /// Line of the opening fence.
    pub line: usize,
    pub code: String,
}

/// The code of every ```sh (or bash, shell, console, zsh) block.
pub fn shell_blocks(text: &str) -> Vec<ShellBlock> {
    let mut out = Vec::new();
    let mut current: Option<ShellBlock> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let lang = info.split([',', ' ']).next().unwrap_or("");
                if matches!(lang, "sh" | "bash" | "shell" | "console" | "zsh") {
                    current = Some(ShellBlock {
                        line: line_at(text, range.start),
                        code: String::new(),
                    });
                }
            }
            Event::Text(t) => {
                if let Some(block) = current.as_mut() {
                    block.code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

/// A fenced or indented code block: where it starts and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    pub line: usize,
    pub code: String,
}

/// Every code block of the page, in order.
pub fn code_blocks(text: &str) -> Vec<CodeBlock> {
    let mut out = Vec::new();
    let mut current: Option<CodeBlock> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                current = Some(CodeBlock {
                    line: line_at(text, range.start),
                    code: String::new(),
                });
            }
            Event::Text(t) => {
                if let Some(block) = current.as_mut() {
                    block.code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

/// The chapter's motto: from the first line that starts `> *"`, the words
/// between the quotes (straight, curly or 「」; `*` or `_` for the italics).
/// Whatever follows the closing `"*` is not part of it.
pub fn motto(text: &str) -> Option<String> {
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            continue;
        }
        let Some(quote) = trimmed.strip_prefix('>') else {
            continue;
        };
        let quote = quote.trim_start();
        for mark in ["*", "_"] {
            // Straight, curly, and the Japanese corner brackets.
            for (open, close) in [
                ("\"", "\""),
                ("\u{201c}", "\u{201d}"),
                ("\u{300c}", "\u{300d}"),
            ] {
                let Some(said) = quote.strip_prefix(mark).and_then(|q| q.strip_prefix(open)) else {
                    continue;
                };
                if let Some(end) = said.find(&format!("{close}{mark}")) {
                    return Some(said[..end].to_string());
                }
            }
        }
    }
    None
}

/// A bullet of a list: its first line (1-based) and its lines, the first
/// one and every indented line that continues it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bullet {
    pub line: usize,
    pub lines: Vec<String>,
}

/// Every bullet whose first line starts with `start` (such as
/// ``- `Cargo.toml` ``), outside fenced code. The bullet goes on over the
/// following lines that are indented and not blank.
pub fn bullets(text: &str, start: &str) -> Vec<Bullet> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut current: Option<Bullet> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if let Some(bullet) = current.as_mut() {
            if line.starts_with([' ', '\t']) && !trimmed.is_empty() {
                bullet.lines.push(line.to_string());
                continue;
            }
            out.extend(current.take());
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
        } else if line.starts_with(start) {
            current = Some(Bullet {
                line: index + 1,
                lines: vec![line.to_string()],
            });
        }
    }
    out.extend(current);
    out
}

/// The code spans of `text` (`` `x` ``, ``` ``x`` ```): for each, the
/// 0-based line it starts on and its contents, trimmed. A span may cross a
/// line break, as in markdown; a run of backticks that nothing closes is
/// plain text.
pub fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(found) = text[rest..].find('`') {
        let open = rest + found;
        let ticks = text[open..].len() - text[open..].trim_start_matches('`').len();
        let body = open + ticks;
        // The closing run has exactly as many backticks.
        let mut search = body;
        let mut close = None;
        while let Some(found) = text[search..].find('`') {
            let at = search + found;
            let run = text[at..].len() - text[at..].trim_start_matches('`').len();
            if run == ticks {
                close = Some(at);
                break;
            }
            search = at + run;
        }
        match close {
            Some(at) => {
                let line = text[..open].matches('\n').count();
                out.push((line, text[body..at].trim().to_string()));
                rest = at + ticks;
            }
            None => rest = body,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_parsed_like_mdbook_does() {
        let text = "x\n{{#include ../../crates/a/src/hooks.rs:run_tool}}\n\
                    ```rust\n{{#rustdoc_include a.rs:10:20}}\n```\n\
                    {{ #include b.rs }} {{#include c.rs:5}} {{#include d.rs::7}} {{#include e.rs:3:}}\n\
                    \\{{#include escaped.rs}} {{#title T}} {{#playground p.rs editable}}";
        let found: Vec<(usize, String, Selector)> = includes(text)
            .into_iter()
            .map(|i| (i.line, i.path, i.selector))
            .collect();
        assert_eq!(
            found,
            [
                (
                    2,
                    "../../crates/a/src/hooks.rs".into(),
                    Selector::Anchor("run_tool".into())
                ),
                (4, "a.rs".into(), Selector::Lines(Some(10), Some(20))),
                (6, "b.rs".into(), Selector::All),
                (6, "c.rs".into(), Selector::Lines(Some(5), Some(5))),
                (6, "d.rs".into(), Selector::Lines(None, Some(7))),
                (6, "e.rs".into(), Selector::Lines(Some(3), None)),
                (7, "p.rs".into(), Selector::All),
            ]
        );
    }

    #[test]
    fn links_skip_code_and_heading_ids_follow_mdbook() {
        let text = "# The `bash` tool!\n\nSee [a](a.md#x) and ![i](img/p.png).\n\n\
                    `[not](a link)`\n\n```rust\nlet x = v[0](1);\n```\n\n[r]: ref.md\n\n\
                    Use [r].\n\n## Again\n\n## Again\n\n## Custom {#my-id}\n";
        let dests: Vec<String> = links(text).into_iter().map(|l| l.dest).collect();
        assert_eq!(dests, ["a.md#x", "img/p.png", "ref.md"]);
        let mut ids: Vec<String> = heading_ids(text).into_iter().collect();
        ids.sort();
        assert_eq!(ids, ["again", "again-1", "my-id", "the-bash-tool"]);
        assert_eq!(title(text).as_deref(), Some("The bash tool!"));
    }

    #[test]
    fn shell_blocks_and_the_motto_are_found() {
        let text = "> Note: not this.\n\n> *\"One loop & Bash is all you need\"* \u{2014} One tool.\n\n\
                    ```sh\ncargo run -p s01_agent_loop\n```\n\n```rust\nfn main() {}\n```\n";
        assert_eq!(
            motto(text).as_deref(),
            Some("One loop & Bash is all you need")
        );
        assert_eq!(
            motto("```\n> *\"in code\"*\n```\n> _\u{201c}Curly\u{201d}_\n").as_deref(),
            Some("Curly")
        );
        assert_eq!(
            motto("> *\u{300c}一周する。\u{300d}* \u{2014} x\n").as_deref(),
            Some("一周する。")
        );
        assert_eq!(motto("> *not quoted*\n"), None);
        let blocks = shell_blocks(text);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].code, "cargo run -p s01_agent_loop\n");
        assert_eq!(blocks[0].line, 5);
    }

    #[test]
    fn bullets_go_on_over_indented_lines_and_code_spans_are_read() {
        let text = "- `Cargo.toml` \u{2014} `clap` and\n  `serde`.\n- `src/x.rs` uses `tokio`.\n\n\
                    ```\n- `Cargo.toml` in code\n```\n- `Cargo.toml`: `a`\n\tgoes on\n\n  not after a blank\n";
        let found = bullets(text, "- `Cargo.toml`");
        assert_eq!(
            found,
            [
                Bullet {
                    line: 1,
                    lines: vec![
                        "- `Cargo.toml` \u{2014} `clap` and".into(),
                        "  `serde`.".into()
                    ],
                },
                Bullet {
                    line: 8,
                    lines: vec!["- `Cargo.toml`: `a`".into(), "\tgoes on".into()],
                },
            ]
        );
        assert_eq!(
            code_spans("`a` and ``b ` c`` and `d\ne` and ` f ` and `open"),
            [
                (0, "a".to_string()),
                (0, "b ` c".to_string()),
                (0, "d\ne".to_string()),
                (1, "f".to_string())
            ]
        );
    }
}
