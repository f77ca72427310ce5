//! A memory file's frontmatter: the YAML between its two `---` lines.
//!
//! It is read with the YAML parser lesson 7 brought in for skill files, so
//! whatever YAML allows works in a memory written by hand: quoted values,
//! comments, keys the harness does not use, and values over several lines
//! (`description: |` or `>`). A frontmatter the parser refuses but that is
//! plain `key: value` lines is still read, line by line: that is what a
//! person writes who puts a colon in a value (`description: Note: use
//! tabs`), which YAML only accepts in quotes, and what simpler tools write
//! (the course's Python version among them, and older versions of this
//! harness). The harness itself writes values the parser reads back
//! unchanged.

use yaml_serde::Value;

// ANCHOR: read
/// The fields of a memory's frontmatter, as text, before they are checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub kind: Option<String>,
    pub updated: Option<String>,
}

/// Splits a memory file into its frontmatter and its body.
pub fn split(text: &str) -> Result<(&str, &str), ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next().filter(|line| line.trim_end() == "---") else {
        return Err(ParseError::NoFrontmatter);
    };
    let start = first.len();
    let mut offset = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(ParseError::Unclosed)
}

/// Reads the frontmatter as YAML, or else as `key: value` lines; if both
/// fail, the YAML parser's complaint is the one reported.
pub fn read(yaml: &str) -> Result<Fields, ParseError> {
    from_yaml(yaml).or_else(|error| from_lines(yaml).ok_or(error))
}

fn from_yaml(yaml: &str) -> Result<Fields, ParseError> {
    // A newline stands in for the opening `---`, so the line numbers in the
    // parser's messages are the file's line numbers.
    let value: Value = yaml_serde::from_str(&format!("\n{yaml}"))
        .map_err(|error| ParseError::Yaml(error.to_string()))?;
    let mapping = match value {
        Value::Mapping(mapping) => mapping,
        // Nothing but comments, or nothing at all.
        Value::Null => return Ok(Fields::default()),
        _ => return Err(ParseError::Yaml("it is not `key: value` fields".into())),
    };
    let mut fields = Fields::default();
    for (key, value) in &mapping {
        let (slot, key) = match key.as_str() {
            Some("name") => (&mut fields.name, "name"),
            Some("description") => (&mut fields.description, "description"),
            Some("type") => (&mut fields.kind, "type"),
            Some("updated") => (&mut fields.updated, "updated"),
            // Other keys (a hand-written `tags:`, say) are ignored.
            _ => continue,
        };
        *slot = match value {
            Value::String(text) => Some(text.clone()),
            // `name: 2024` or `description: true` are text to a person.
            Value::Number(number) => Some(number.to_string()),
            Value::Bool(flag) => Some(flag.to_string()),
            Value::Null => None,
            _ => return Err(ParseError::NotText(key)),
        };
    }
    Ok(fields)
}

/// The lenient reading: every line that is not blank or a `#` comment is
/// `key: value`, the value being everything after the first colon, quotes
/// around it removed. `None` if a line is not.
fn from_lines(yaml: &str) -> Option<Fields> {
    let mut fields = Fields::default();
    for line in yaml.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once(':')?;
        let value = Some(unquote(value.trim()).to_string());
        match key.trim() {
            "name" => fields.name = value,
            "description" => fields.description = value,
            "type" => fields.kind = value,
            "updated" => fields.updated = value,
            _ => {}
        }
    }
    Some(fields)
}

/// `"text"` or `'text'` → `text`.
fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}
// ANCHOR_END: read

// ANCHOR: write
/// The frontmatter for `fields`, one `key: value` line each, in order.
pub fn write(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(key, value)| format!("{key}: {}\n", scalar(value)))
        .collect()
}

/// `value` as YAML: plain if the parser reads it back as this very text,
/// else in single quotes, where nothing but a quote needs escaping (it is
/// doubled). Values are single lines, so these two styles cover them all:
/// `Tabs: always` or `123` or `# not a comment` come back quoted.
fn scalar(value: &str) -> String {
    let parsed: Result<Value, _> = yaml_serde::from_str(&format!("key: {value}"));
    let plain = matches!(parsed, Ok(Value::Mapping(mapping))
        if mapping.get("key").and_then(Value::as_str) == Some(value));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', "''"))
    }
}
// ANCHOR_END: write

/// Why a memory file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("it does not start with a `---` frontmatter line")]
    NoFrontmatter,
    #[error("its frontmatter has no closing `---` line")]
    Unclosed,
    #[error("its frontmatter is not valid YAML: {0}")]
    Yaml(String),
    #[error("its frontmatter's `{0}` is not text")]
    NotText(&'static str),
    #[error("its frontmatter has no `{0}`")]
    Missing(&'static str),
    #[error("unknown type {0:?} (use one of user, feedback, project, reference)")]
    UnknownType(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_written_value_reads_back_unchanged() {
        let values = [
            "plain words",
            "Tabs: always",
            "ends with a colon:",
            "# not a comment",
            "a # b",
            "123",
            "1.50",
            "true",
            "null",
            "~",
            "",
            "- a dash",
            "[a, b]",
            "{a: b}",
            "it's 'quoted'",
            "\"double\"",
            "!tag",
            "&anchor",
            "*alias",
            "%percent",
            "@at",
            "`tick",
            "| bar",
            "> gt",
            "? key",
            "日本語: テキスト",
            "2025-03-14T09:26:53Z",
        ];
        for value in values {
            let yaml = write(&[("description", value)]);
            let fields = read(&yaml).unwrap();
            assert_eq!(fields.description.as_deref(), Some(value), "{yaml}");
            assert_eq!(from_yaml(&yaml).unwrap(), fields, "{yaml}");
        }
        assert_eq!(write(&[("type", "user")]), "type: user\n");
        assert_eq!(write(&[("description", "a: b")]), "description: 'a: b'\n");
    }
}
