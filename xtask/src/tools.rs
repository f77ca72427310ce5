//! The tools a lesson gives the model, as the lesson really sends them.
//!
//! Every lesson has the same test module, `tests/it/offered_tools.rs`: it
//! runs one turn with the scripted model and snapshots the `tools` of the
//! first request with insta (cache markers removed, since they mark the
//! request, not the tool). That snapshot, [`SNAPSHOT`], is where the pages
//! take each tool's name, description and input schema from: nothing is
//! read from the lesson's sources, so a tool named by a constant, a
//! description built with `format!`, or a spec assembled any other way is
//! shown as the model sees it.
//!
//! A missing snapshot is reported by `cargo xtask check`; the lesson's tests
//! write it (`INSTA_UPDATE=always cargo test -p <lesson> --test it --
//! offered_tools`).

use std::fmt;
use std::path::Path;

use crate::lessons::Lesson;

/// Where a lesson's snapshot of its offered tools is, crate-relative.
pub const SNAPSHOT: &str = "tests/it/snapshots/it__offered_tools__tools.snap";

/// One tool as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub inputs: Vec<Input>,
    /// The whole input schema: two tools are the same when name,
    /// description and schema are.
    pub schema: Json,
}

/// One property of a tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub name: String,
    /// The JSON schema `type` (`integer | null` for a list), or empty.
    pub ty: String,
    pub required: bool,
    pub description: String,
}

/// Why a lesson's tools are not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unknown {
    /// There is no snapshot.
    Missing,
    /// The snapshot is not a list of tools: why.
    Invalid(String),
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unknown::Missing => f.write_str("is missing"),
            Unknown::Invalid(why) => write!(f, "is not a list of tools ({why})"),
        }
    }
}

/// The shell command that writes `lesson`'s snapshot.
pub fn update_command(lesson: &Lesson) -> String {
    format!(
        "INSTA_UPDATE=always cargo test -p {} --test it -- offered_tools",
        lesson.name
    )
}

/// The tools `lesson` offers, from its snapshot.
pub fn offered(lesson: &Lesson) -> Result<Vec<Tool>, Unknown> {
    read_snapshot(&lesson.dir.join(SNAPSHOT))
}

/// The tools in the snapshot file at `path`.
pub fn read_snapshot(path: &Path) -> Result<Vec<Tool>, Unknown> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Err(Unknown::Missing);
    };
    parse_snapshot(&text).map_err(Unknown::Invalid)
}

/// The tools in the text of an insta snapshot: its `---` header (if any)
/// is skipped, the rest is the JSON list.
pub fn parse_snapshot(text: &str) -> Result<Vec<Tool>, String> {
    let body = strip_header(text);
    let Json::Array(items) = parse_json(body)? else {
        return Err("the snapshot is not a JSON list".into());
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let name = item
                .get("name")
                .and_then(Json::as_str)
                .ok_or_else(|| format!("tool {} has no name", index + 1))?;
            let schema = item.get("input_schema").cloned().unwrap_or(Json::Null);
            Ok(Tool {
                name: name.to_string(),
                description: item
                    .get("description")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string(),
                inputs: inputs(&schema),
                schema,
            })
        })
        .collect()
}

/// The snapshot's contents after insta's header: `---`, metadata lines,
/// `---`.
fn strip_header(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---\n") else {
        return text;
    };
    match rest.find("\n---\n") {
        Some(at) => &rest[at + "\n---\n".len()..],
        None => text,
    }
}

/// The input fields of a schema: its `properties`, with `required`.
fn inputs(schema: &Json) -> Vec<Input> {
    let required: Vec<&str> = match schema.get("required") {
        Some(Json::Array(names)) => names.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    let Some(Json::Object(properties)) = schema.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| Input {
            name: name.clone(),
            ty: match property.get("type") {
                Some(Json::Str(ty)) => ty.clone(),
                Some(Json::Array(types)) => types
                    .iter()
                    .filter_map(Json::as_str)
                    .collect::<Vec<_>>()
                    .join(" | "),
                _ => String::new(),
            },
            required: required.contains(&name.as_str()),
            description: property
                .get("description")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect()
}

/// A JSON value whose objects keep their keys in file order, so inputs are
/// listed in the order the snapshot has them.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// As written.
    Number(String),
    Str(String),
    Array(Vec<Json>),
    /// Keys in file order.
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Parses one JSON value (with nothing but whitespace around it).
pub fn parse_json(text: &str) -> Result<Json, String> {
    let mut parser = Parser { text, at: 0 };
    let value = parser.value()?;
    parser.skip_whitespace();
    if parser.at == text.len() {
        Ok(value)
    } else {
        Err(parser.error("text after the JSON value"))
    }
}

struct Parser<'a> {
    text: &'a str,
    /// Byte offset of the next character.
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        let line = self.text[..self.at].matches('\n').count() + 1;
        format!("{what} at line {line} of the JSON")
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn skip_whitespace(&mut self) {
        while self
            .peek()
            .is_some_and(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
        {
            self.at += 1;
        }
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        self.skip_whitespace();
        if self.next() == Some(wanted) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{wanted}`")))
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.skip_whitespace();
        match self.peek() {
            Some('{') => {
                self.at += 1;
                let mut fields = Vec::new();
                self.skip_whitespace();
                if self.peek() == Some('}') {
                    self.at += 1;
                    return Ok(Json::Object(fields));
                }
                loop {
                    self.skip_whitespace();
                    let key = self.string()?;
                    self.expect(':')?;
                    fields.push((key, self.value()?));
                    self.skip_whitespace();
                    match self.next() {
                        Some(',') => {}
                        Some('}') => return Ok(Json::Object(fields)),
                        _ => return Err(self.error("expected `,` or `}`")),
                    }
                }
            }
            Some('[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_whitespace();
                if self.peek() == Some(']') {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    self.skip_whitespace();
                    match self.next() {
                        Some(',') => {}
                        Some(']') => return Ok(Json::Array(items)),
                        _ => return Err(self.error("expected `,` or `]`")),
                    }
                }
            }
            Some('"') => Ok(Json::Str(self.string()?)),
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
                {
                    self.at += 1;
                }
                Ok(Json::Number(self.text[start..self.at].to_string()))
            }
            _ => {
                for (word, value) in [
                    ("null", Json::Null),
                    ("true", Json::Bool(true)),
                    ("false", Json::Bool(false)),
                ] {
                    if self.text[self.at..].starts_with(word) {
                        self.at += word.len();
                        return Ok(value);
                    }
                }
                Err(self.error("expected a JSON value"))
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.next() != Some('"') {
            return Err(self.error("expected a string"));
        }
        let mut out = String::new();
        loop {
            match self.next() {
                None => return Err(self.error("unterminated string")),
                Some('"') => return Ok(out),
                Some('\\') => match self.next() {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('/') => out.push('/'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('t') => out.push('\t'),
                    Some('u') => {
                        let high = self.hex4()?;
                        let code = if (0xD800..0xDC00).contains(&high)
                            && self.text[self.at..].starts_with("\\u")
                        {
                            self.at += 2;
                            let low = self.hex4()?;
                            0x10000 + ((high - 0xD800) << 10) + low.wrapping_sub(0xDC00)
                        } else {
                            high
                        };
                        out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    _ => return Err(self.error("bad escape in a string")),
                },
                Some(c) => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.error("short \\u escape"))?;
        let code = u32::from_str_radix(digits, 16).map_err(|_| self.error("bad \\u escape"))?;
        self.at += 4;
        Ok(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_key_order_and_reads_escapes() {
        let value = parse_json(
            r#" {"b": [1, -2.5e3, true, null], "a": "x\"\n\u00e9\ud83d\ude00\/", "c": {}} "#,
        )
        .unwrap();
        let Json::Object(fields) = &value else {
            panic!("{value:?}")
        };
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert_eq!(
            value.get("a"),
            Some(&Json::Str("x\"\n\u{e9}\u{1F600}/".into()))
        );
        assert_eq!(
            value.get("b"),
            Some(&Json::Array(vec![
                Json::Number("1".into()),
                Json::Number("-2.5e3".into()),
                Json::Bool(true),
                Json::Null
            ]))
        );
        for bad in ["", "[1,", "{\"a\" 1}", "[1] x", "\"\\q\""] {
            assert!(parse_json(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_snapshot_is_read_after_its_header_with_inputs_in_order() {
        let snapshot = r#"---
source: crates/s01/tests/it/offered_tools.rs
expression: tools
---
[
  {
    "description": "Read a file.",
    "input_schema": {
      "properties": {
        "path": {"description": "Where.", "type": "string"},
        "limit": {"type": ["integer", "null"]}
      },
      "required": ["path"],
      "type": "object"
    },
    "name": "read_file"
  }
]
"#;
        let tools = parse_snapshot(snapshot).unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "read_file");
        assert_eq!(tools[0].description, "Read a file.");
        assert_eq!(
            tools[0].inputs,
            [
                Input {
                    name: "path".into(),
                    ty: "string".into(),
                    required: true,
                    description: "Where.".into()
                },
                Input {
                    name: "limit".into(),
                    ty: "integer | null".into(),
                    required: false,
                    description: String::new()
                },
            ]
        );
        assert!(parse_snapshot("---\nx: y\n---\n{}").is_err());
        assert!(parse_snapshot("---\nx: y\n---\n[{\"description\": \"no name\"}]").is_err());
    }
}
