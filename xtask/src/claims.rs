//! Counts a chapter states that the code can confirm (rule 13 of
//! `cargo xtask check`).
//!
//! A chapter that says "the twelve methods of `shared::hooks::Hooks`" or
//! "the five new tools" goes on saying it after a method or a tool is
//! added, unless something counts. Two kinds of sentence are read, in the
//! English chapters (a translation is stamped against its English page, so
//! it is redone when the English number changes):
//!
//! - "N methods" with a code span in the same paragraph that names a trait
//!   (its last path segment, `Hooks` of `shared::hooks::Hooks`) defined in
//!   the lesson or in `shared`: N must be the number of methods the trait
//!   declares. A paragraph naming no such trait states nothing checkable.
//! - "N new tools": N must be the number of tools the lesson offers that
//!   the previous lesson did not, by name, as both lessons' snapshots of
//!   their offered tools record them (see [`crate::tools`]).
//!
//! Numbers are written as digits or as English words up to twenty, the way
//! the book writes them.

use syn::{Item, TraitItem};

/// The English number words the book uses, by value.
const NUMBER_WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// The value of `word` ("twelve", "Twelve", "12"), if it is a number.
pub fn number(word: &str) -> Option<usize> {
    if let Ok(value) = word.parse() {
        return Some(value);
    }
    let lower = word.to_ascii_lowercase();
    NUMBER_WORDS.iter().position(|known| *known == lower)
}

/// A count a chapter states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// 1-based line of the chapter.
    pub line: usize,
    /// The number as written ("twelve").
    pub written: String,
    /// Its value.
    pub value: usize,
    /// What is counted.
    pub subject: Subject,
}

/// What a [`Claim`] counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// The methods of a trait; the code spans of the paragraph, which may
    /// name it.
    Methods { spans: Vec<String> },
    /// The tools the lesson adds.
    NewTools,
}

/// Every count `text` (a chapter) states, outside fenced code.
pub fn claims(text: &str) -> Vec<Claim> {
    let mut out = Vec::new();
    for paragraph in paragraphs(text) {
        let words: Vec<(usize, &str)> = paragraph
            .lines
            .iter()
            .enumerate()
            .flat_map(|(offset, line)| {
                line.split(|c: char| !c.is_alphanumeric())
                    .filter(|word| !word.is_empty())
                    .map(move |word| (paragraph.first_line + offset, word))
            })
            .collect();
        for (index, (line, word)) in words.iter().enumerate() {
            let Some(value) = number(word) else { continue };
            let next = |step: usize| words.get(index + step).map(|(_, word)| *word);
            let subject = match (next(1), next(2)) {
                (Some("methods"), _) => Subject::Methods {
                    spans: crate::markdown::code_spans(&paragraph.lines.join("\n"))
                        .into_iter()
                        .map(|(_, span)| span)
                        .collect(),
                },
                (Some("new"), Some("tools")) => Subject::NewTools,
                _ => continue,
            };
            out.push(Claim {
                line: *line,
                written: (*word).to_string(),
                value,
                subject,
            });
        }
    }
    out
}

/// A paragraph: consecutive non-blank lines outside fenced code.
struct Paragraph<'a> {
    /// 1-based line of its first line.
    first_line: usize,
    lines: Vec<&'a str>,
}

fn paragraphs(text: &str) -> Vec<Paragraph<'_>> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut current: Option<Paragraph<'_>> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            out.extend(current.take());
            fence = Some(&trimmed[..3]);
            continue;
        }
        if trimmed.is_empty() {
            out.extend(current.take());
            continue;
        }
        current
            .get_or_insert(Paragraph {
                first_line: index + 1,
                lines: Vec::new(),
            })
            .lines
            .push(line);
    }
    out.extend(current);
    out
}

/// The number of methods of every trait in `sources` (path, text), by the
/// trait's name. A file that does not parse is skipped (the build reports
/// it); two traits of one name both count, as a list.
pub fn trait_methods(sources: &[(String, String)]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (_, text) in sources {
        if let Ok(file) = syn::parse_file(text) {
            collect_traits(&file.items, &mut out);
        }
    }
    out
}

fn collect_traits(items: &[Item], out: &mut Vec<(String, usize)>) {
    for item in items {
        match item {
            Item::Trait(item) => {
                let methods = item
                    .items
                    .iter()
                    .filter(|member| matches!(member, TraitItem::Fn(_)))
                    .count();
                out.push((item.ident.to_string(), methods));
            }
            Item::Mod(module) => {
                if let Some((_, items)) = &module.content {
                    collect_traits(items, out);
                }
            }
            _ => {}
        }
    }
}

/// The trait a code span names (`shared::hooks::Hooks` → `Hooks`,
/// `Hooks::before_tool` is a method, not the trait).
pub fn trait_name(span: &str) -> Option<&str> {
    let last = span.rsplit("::").next()?;
    let is_name = last.chars().next().is_some_and(char::is_uppercase)
        && last.chars().all(|c| c.is_alphanumeric() || c == '_');
    is_name.then_some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_digits_or_words() {
        assert_eq!(number("twelve"), Some(12));
        assert_eq!(number("Five"), Some(5));
        assert_eq!(number("12"), Some(12));
        assert_eq!(number("methods"), None);
    }

    #[test]
    fn claims_are_read_across_line_breaks_and_not_in_code() {
        let text = "Intro.\n\nThe whole course hangs off the twelve\nmethods of `shared::hooks::Hooks`.\n\n```text\nten methods\n```\n\nIt names the five new tools.\nNo count: three tools.\n";
        let found = claims(text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].line, 3);
        assert_eq!(found[0].value, 12);
        assert_eq!(
            found[0].subject,
            Subject::Methods {
                spans: vec!["shared::hooks::Hooks".into()]
            }
        );
        assert_eq!(found[1].line, 10);
        assert_eq!(found[1].value, 5);
        assert_eq!(found[1].subject, Subject::NewTools);
    }

    #[test]
    fn traits_count_their_methods_only() {
        let source = "pub trait Hooks { type X; const N: u8; fn a(&self); fn b(&self) {} }\n\
                      mod inner { trait Other { fn c(); } }\n";
        let found = trait_methods(&[("src/lib.rs".into(), source.into())]);
        assert_eq!(found, vec![("Hooks".into(), 2), ("Other".into(), 1)]);
    }

    #[test]
    fn a_span_names_a_trait_by_its_last_segment() {
        assert_eq!(trait_name("shared::hooks::Hooks"), Some("Hooks"));
        assert_eq!(trait_name("Hooks::before_tool"), None);
        assert_eq!(trait_name("src/hooks.rs"), None);
    }
}
