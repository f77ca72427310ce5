//! Splitting a `SKILL.md` into its YAML frontmatter and its body.
//!
//! A skill file starts with a block of YAML between two `---` lines; the
//! rest is Markdown for the model:
//!
//! ```text
//! ---
//! name: code-review
//! description: |
//!   Review a change for bugs, risks and clarity.
//!   Use before merging.
//! ---
//! # Code review
//! ...
//! ```
//!
//! Only `name` and `description` matter to the harness; other keys
//! (`license`, `metadata`, ...) are allowed and ignored. The YAML is parsed
//! by a real YAML parser, so block scalars (`|`, `>`), quoting and comments
//! work as a skill author expects.

use serde::Deserialize;

/// The longest description accepted, in characters. The description is
/// sent with every request, so a long one costs tokens on every call.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The longest skill name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// What the harness reads from a skill's frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Frontmatter {
    /// The name the model loads the skill by.
    pub name: String,
    /// One or a few sentences saying when the skill is useful: the catalog
    /// line. Line breaks of a multi-line value are kept here.
    pub description: String,
}

/// Why a `SKILL.md` was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file does not start with a `---` line.
    #[error("no YAML frontmatter: the file must start with a line `---`")]
    Missing,
    /// The opening `---` has no closing partner.
    #[error("the frontmatter is not closed: no line `---` after the opening one")]
    Unclosed,
    /// The YAML does not parse, or lacks a field, or has one of the wrong type.
    #[error("bad frontmatter: {0}")]
    Yaml(String),
    /// A required field is blank.
    #[error("`{0}` is empty")]
    Empty(&'static str),
    /// The name could not serve as a plain identifier.
    #[error(
        "invalid name {0:?}: use 1 to {MAX_NAME_CHARS} lowercase letters, digits and \
         hyphens, not starting or ending with a hyphen"
    )]
    BadName(String),
    /// The description is longer than [`MAX_DESCRIPTION_CHARS`].
    #[error("the description has {0} characters; the limit is {MAX_DESCRIPTION_CHARS}")]
    LongDescription(usize),
}

// ANCHOR: parse
/// Parses a whole `SKILL.md`: its frontmatter, checked, and its body.
pub fn parse(text: &str) -> Result<(Frontmatter, &str), FrontmatterError> {
    let (yaml, body) = split(text)?;
    // A newline stands in for the opening `---`, so the line numbers in the
    // parser's messages are the file's line numbers.
    let front: Frontmatter = yaml_serde::from_str(&format!("\n{yaml}"))
        .map_err(|error| FrontmatterError::Yaml(error.to_string()))?;
    check(&front)?;
    Ok((front, body))
}

/// Finds the YAML between the `---` lines, and the body after them.
fn split(text: &str) -> Result<(&str, &str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontmatterError::Missing)?;
    if first.trim_end() != "---" {
        return Err(FrontmatterError::Missing);
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        if line.trim_end() == "---" {
            let yaml = &text[yaml_start..offset];
            let body = &text[offset + line.len()..];
            return Ok((yaml, body.trim_start_matches(['\r', '\n'])));
        }
        offset += line.len();
    }
    Err(FrontmatterError::Unclosed)
}
// ANCHOR_END: parse

fn check(front: &Frontmatter) -> Result<(), FrontmatterError> {
    if front.name.trim().is_empty() {
        return Err(FrontmatterError::Empty("name"));
    }
    if !is_valid_name(&front.name) {
        return Err(FrontmatterError::BadName(front.name.clone()));
    }
    if front.description.trim().is_empty() {
        return Err(FrontmatterError::Empty("description"));
    }
    let chars = front.description.trim().chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(FrontmatterError::LongDescription(chars));
    }
    Ok(())
}

/// `code-review`, `pdf2`: lowercase ASCII letters, digits and inner hyphens.
/// A name like this can never be mistaken for a path.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> FrontmatterError {
        match parse(text) {
            Ok(parsed) => panic!("accepted {text:?} as {parsed:?}"),
            Err(error) => error,
        }
    }

    #[test]
    fn reads_plain_and_block_values_and_the_body() {
        let (front, body) = parse(
            "---\nname: demo\ndescription: |\n  First line.\n  Second line.\nlicense: MIT\n---\n\n# Demo\nbody\n",
        )
        .unwrap();
        assert_eq!(front.name, "demo");
        assert_eq!(front.description, "First line.\nSecond line.\n");
        assert_eq!(body, "# Demo\nbody\n");
    }

    #[test]
    fn accepts_crlf_a_bom_and_folded_values() {
        let (front, body) =
            parse("\u{feff}---\r\nname: demo\r\ndescription: >\r\n  one\r\n  two\r\n---\r\nbody")
                .unwrap();
        assert_eq!(front.description, "one two\n");
        assert_eq!(body, "body");
    }

    #[test]
    fn names_each_problem() {
        assert_eq!(error("# no frontmatter"), FrontmatterError::Missing);
        assert_eq!(error(""), FrontmatterError::Missing);
        assert_eq!(
            error("---\nname: a\ndescription: b\n"),
            FrontmatterError::Unclosed
        );
        let missing = error("---\nname: a\n---\n").to_string();
        assert!(missing.contains("missing field `description`"), "{missing}");
        let bad_yaml = error("---\nname: [a\ndescription: b\n---\n").to_string();
        assert!(bad_yaml.starts_with("bad frontmatter"), "{bad_yaml}");
        assert!(bad_yaml.contains("line "), "{bad_yaml}");
        assert_eq!(
            error("---\nname: a\ndescription: '  '\n---\n"),
            FrontmatterError::Empty("description")
        );
        assert!(matches!(
            error("---\nname: ../x\ndescription: b\n---\n"),
            FrontmatterError::BadName(_)
        ));
        let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
        assert_eq!(error(&long), FrontmatterError::LongDescription(1025));
    }

    #[test]
    fn yaml_errors_give_file_line_numbers() {
        // The quoted value that never closes starts on line 3, column 14, of the file.
        let message = error("---\nname: a\ndescription: \"unclosed\n---\n").to_string();
        assert!(message.contains("line 3 column 14"), "{message}");
    }

    #[test]
    fn names_are_plain_identifiers() {
        for good in ["a", "code-review", "pdf2", "x-1-y"] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "A",
            "a b",
            "a/b",
            "..",
            "a_b",
            &"a".repeat(65),
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }
}
