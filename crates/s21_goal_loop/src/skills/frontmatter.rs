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
//!
//! A file with no frontmatter at all is still a skill, as in the course's
//! Python version: its folder's name stands in for `name`, and its first
//! line of text (a Markdown heading's `#` marks removed) for `description`.
//! A file that has frontmatter but gets it wrong is refused: the author
//! meant to write those fields, and a silent guess would hide the mistake.

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
    /// No frontmatter, and no line of text to take a description from.
    #[error("no YAML frontmatter, and no text to take a description from")]
    Blank,
    /// No frontmatter, and a folder name that cannot serve as the name.
    #[error(
        "no YAML frontmatter, so the folder name {0:?} would be the skill's name, but a name \
         is 1 to {MAX_NAME_CHARS} lowercase letters, digits and hyphens, not starting or \
         ending with a hyphen"
    )]
    BadFolderName(String),
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
/// Parses a whole `SKILL.md`, found in the folder named `folder`: its
/// frontmatter, checked, and its body. Without frontmatter, the folder
/// name and the first line of text stand in for it, and the whole file is
/// the body.
pub fn parse<'a>(text: &'a str, folder: &str) -> Result<(Frontmatter, &'a str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some((yaml, body)) = split(text)? else {
        let front = without_frontmatter(text, folder)?;
        check(&front)?;
        return Ok((front, text.trim_start_matches(['\r', '\n'])));
    };
    // A newline stands in for the opening `---`, so the line numbers in the
    // parser's messages are the file's line numbers.
    let front: Frontmatter = yaml_serde::from_str(&format!("\n{yaml}"))
        .map_err(|error| FrontmatterError::Yaml(error.to_string()))?;
    check(&front)?;
    Ok((front, body))
}

/// Finds the YAML between the `---` lines, and the body after them;
/// `None` if the file does not start with a `---` line.
fn split(text: &str) -> Result<Option<(&str, &str)>, FrontmatterError> {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next().filter(|first| first.trim_end() == "---") else {
        return Ok(None);
    };
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        if line.trim_end() == "---" {
            let yaml = &text[yaml_start..offset];
            let body = &text[offset + line.len()..];
            return Ok(Some((yaml, body.trim_start_matches(['\r', '\n']))));
        }
        offset += line.len();
    }
    Err(FrontmatterError::Unclosed)
}

/// The frontmatter a file without one stands for: the folder's name, and
/// the first line that has text once a heading's `#` marks are removed.
fn without_frontmatter(text: &str, folder: &str) -> Result<Frontmatter, FrontmatterError> {
    if !is_valid_name(folder) {
        return Err(FrontmatterError::BadFolderName(folder.to_string()));
    }
    let description = text
        .lines()
        .map(|line| line.trim().trim_start_matches('#').trim())
        .find(|line| !line.is_empty())
        .ok_or(FrontmatterError::Blank)?;
    Ok(Frontmatter {
        name: folder.to_string(),
        description: description.to_string(),
    })
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
        match parse(text, "demo") {
            Ok(parsed) => panic!("accepted {text:?} as {parsed:?}"),
            Err(error) => error,
        }
    }

    #[test]
    fn reads_plain_and_block_values_and_the_body() {
        let (front, body) = parse(
            "---\nname: demo\ndescription: |\n  First line.\n  Second line.\nlicense: MIT\n---\n\n# Demo\nbody\n",
            "x",
        )
        .unwrap();
        assert_eq!(front.name, "demo");
        assert_eq!(front.description, "First line.\nSecond line.\n");
        assert_eq!(body, "# Demo\nbody\n");
    }

    #[test]
    fn accepts_crlf_a_bom_and_folded_values() {
        let (front, body) = parse(
            "\u{feff}---\r\nname: demo\r\ndescription: >\r\n  one\r\n  two\r\n---\r\nbody",
            "x",
        )
        .unwrap();
        assert_eq!(front.description, "one two\n");
        assert_eq!(body, "body");
    }

    #[test]
    fn without_frontmatter_the_folder_names_it_and_the_first_line_describes_it() {
        let text = "\u{feff}\n\n## Deploy notes\n\nHow we deploy.\n";
        let (front, body) = parse(text, "deploy").unwrap();
        assert_eq!(front.name, "deploy");
        assert_eq!(front.description, "Deploy notes");
        assert_eq!(body, "## Deploy notes\n\nHow we deploy.\n");
        let (front, _) = parse("Plain first line.\nMore.", "notes").unwrap();
        assert_eq!(front.description, "Plain first line.");
        let long = format!("{}\n", "x".repeat(1025));
        assert_eq!(
            parse(&long, "notes").unwrap_err(),
            FrontmatterError::LongDescription(1025)
        );
    }

    #[test]
    fn names_each_problem() {
        assert_eq!(error(""), FrontmatterError::Blank);
        assert_eq!(error("\n  \n#\n"), FrontmatterError::Blank);
        assert_eq!(
            parse("# Title", "Not A Name").unwrap_err(),
            FrontmatterError::BadFolderName("Not A Name".into())
        );
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
