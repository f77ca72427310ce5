//! The journal: every finished agent call of a run, one JSON line each,
//! so that a resumed run can skip them.
//!
//! The file is `.runtime/<runId>.journal.jsonl`. A line is written — and
//! flushed — the moment an agent call succeeds, and never rewritten, so
//! killing the process at any instant loses at most the calls still
//! running and, if the kill lands inside a write, the one line being
//! written. Loading is defensive: a line that is not a whole record (the
//! torn last line after a `SIGKILL`, or any garbled one) is reported and
//! skipped, and its call simply runs again.
//!
//! Records are found by [`call_key`]: a hash of what the call *is* — its
//! kind, label, prompt and schema — plus which occurrence of that call it
//! is, counted in the order the workflow *issues* its calls, never the
//! order they finish in. Agents in a `parallel` or a `pipeline` finish in
//! a different order every run; a key such as "the 7th completion" would
//! hand one call's result to another on resume. The content has no order
//! in it: the same call gets the same key in every run, and a call whose
//! prompt changed gets a new one and runs again. The occurrence tells
//! apart calls that are identical in content (the same question asked
//! twice, to get two answers): each gets its own key and its own answer
//! back on resume, instead of both sharing whichever was written last.
//! The issue order is the order the workflow's code calls `agent`, which
//! is fixed by the code alone as long as identical calls are issued from
//! the same place in it — one after another, or as the tasks of one
//! `parallel`. (Identical calls issued each after a *different* agent
//! answered — by two items of a `pipeline`, say — are issued in the order
//! those answers came, which can change between runs; each still gets one
//! of the recorded answers, which are answers to the same question, but
//! maybe the other's.)

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use shared::notice::Notices;
use shared::sync::LockExt;

use super::TAG;

// ANCHOR: key
/// The journal key of one call: `agent-` and 16 hex digits of the SHA-256
/// of `kind|label|prompt|schema`, the schema in canonical JSON (keys
/// sorted), so that the same call always gets the same key, whichever
/// order its neighbours finish in and however its schema was written.
///
/// `occurrence` says which of the run's identical calls this is, counting
/// from 1 in the order the workflow issued them (see
/// [`Occurrences::next`]): the first is the bare hash, the `n`-th for
/// `n` ≥ 2 has `-n` appended (`agent-0123456789abcdef-2`). So a run that
/// never repeats a call has the keys it would have without the count.
pub fn call_key(
    kind: &str,
    label: &str,
    prompt: &str,
    schema: Option<&Value>,
    occurrence: usize,
) -> String {
    call_key_with(kind, label, prompt, schema, &[], occurrence)
}

/// [`call_key`] of a call with more content: each `(name, value)` of
/// `extra` (a script's `key` option, a model id) is appended to the basis
/// as `|name=value`. With none, the key is [`call_key`]'s.
pub fn call_key_with(
    kind: &str,
    label: &str,
    prompt: &str,
    schema: Option<&Value>,
    extra: &[(&str, String)],
    occurrence: usize,
) -> String {
    let schema = schema.map_or_else(|| "null".to_string(), canonical_json);
    let mut basis = format!("{kind}|{label}|{prompt}|{schema}");
    for (name, value) in extra {
        basis.push_str(&format!("|{name}={value}"));
    }
    let digest = Sha256::digest(basis.as_bytes());
    let hex: String = digest
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    match occurrence {
        0 | 1 => format!("{kind}-{hex}"),
        n => format!("{kind}-{hex}-{n}"),
    }
}

/// How many times each call has been issued in one attempt of a run.
#[derive(Debug, Default)]
pub struct Occurrences {
    seen: Mutex<HashMap<String, usize>>,
}

impl Occurrences {
    /// Counts one more issue of the call whose first occurrence has the
    /// key `first_key`, and returns which occurrence this one is, from 1.
    /// Called as the call is issued, before anything about it can wait,
    /// so the count follows the order of the workflow's code.
    pub fn next(&self, first_key: &str) -> usize {
        // ANCHOR: exercise-s20-occurrence
        let mut seen = self.seen.locked();
        let count = seen.entry(first_key.to_string()).or_insert(0);
        *count += 1;
        *count
        // ANCHOR_END: exercise-s20-occurrence
    }
}

/// `value` as JSON with every object's keys in sorted order. serde_json
/// sorts them already unless some crate in the build turns on its
/// `preserve_order` feature; the key must not depend on that.
pub fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(fields) => {
            let mut names: Vec<&String> = fields.keys().collect();
            names.sort();
            let inner: Vec<String> = names
                .into_iter()
                .map(|name| {
                    format!(
                        "{}:{}",
                        Value::String(name.clone()),
                        canonical_json(&fields[name])
                    )
                })
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}
// ANCHOR_END: key

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub key: String,
    /// The call's label, for a person reading the file.
    pub label: String,
    /// What the call returned: the parsed object for a call with a schema,
    /// the final text as a JSON string otherwise.
    pub value: Value,
}

// ANCHOR: journal
/// A run's journal: the records loaded from its file, and the file open
/// for appending.
pub struct Journal {
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    cache: HashMap<String, Value>,
    file: File,
}

impl Journal {
    /// Opens (or creates) the journal at `path` and loads its records. Each
    /// line that is not a whole record is reported to `notices` and
    /// skipped; the call it was for will run again.
    pub fn open(path: &Path, notices: &Notices) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut cache = HashMap::new();
        let text = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) if error.kind() == io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(error),
        };
        let ends_cleanly = text.is_empty() || text.ends_with('\n');
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(line) {
                Ok(record) => {
                    cache.insert(record.key, record.value);
                }
                Err(error) => notices.emit(
                    TAG,
                    format!(
                        "{} line {}: not a journal record ({error}); skipped, its call runs again",
                        path.display(),
                        index + 1
                    ),
                ),
            }
        }
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        if !ends_cleanly {
            // A torn last line has no newline; end it, so the next record
            // starts a line of its own instead of extending the garbage.
            file.write_all(b"\n")?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            state: Mutex::new(State { cache, file }),
        })
    }

    /// The value journaled under `key`, if any.
    pub fn cached(&self, key: &str) -> Option<Value> {
        self.state().cache.get(key).cloned()
    }

    /// How many calls the journal holds.
    pub fn len(&self) -> usize {
        self.state().cache.len()
    }

    /// Whether the journal holds no call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one record as one line and flushes it to the file before
    /// returning: a call is only as done as its line on disk.
    pub fn record(&self, record: Record) -> io::Result<()> {
        let mut line = serde_json::to_string(&record).map_err(io::Error::other)?;
        line.push('\n');
        let mut state = self.state();
        // One write of the whole line: a kill can tear it, never
        // interleave it with another record.
        state.file.write_all(line.as_bytes())?;
        state.file.flush()?;
        state.file.sync_data()?;
        state.cache.insert(record.key, record.value);
        Ok(())
    }

    /// Where the journal is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.locked()
    }
}
// ANCHOR_END: journal

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_key_depends_on_content_only_and_not_on_key_order_in_the_schema() {
        let a =
            json!({"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}});
        let b: Value = serde_json::from_str(
            r#"{"properties": {"x": {"type": "string"}}, "required": ["x"], "type": "object"}"#,
        )
        .unwrap();
        assert_eq!(
            call_key("agent", "l", "p", Some(&a), 1),
            call_key("agent", "l", "p", Some(&b), 1)
        );
        assert_ne!(
            call_key("agent", "l", "p", Some(&a), 1),
            call_key("agent", "l", "p2", Some(&a), 1)
        );
        assert_ne!(
            call_key("agent", "l", "p", None, 1),
            call_key("agent", "l2", "p", None, 1)
        );
        assert!(call_key("agent", "l", "p", None, 1).starts_with("agent-"));
    }

    #[test]
    fn identical_calls_are_told_apart_by_their_occurrence() {
        let first = call_key("agent", "l", "p", None, 1);
        let second = call_key("agent", "l", "p", None, 2);
        assert_eq!(second, format!("{first}-2"));
        assert_ne!(second, call_key("agent", "l", "p", None, 3));
        let occurrences = Occurrences::default();
        assert_eq!(occurrences.next(&first), 1);
        assert_eq!(occurrences.next("other"), 1);
        assert_eq!(occurrences.next(&first), 2);
    }

    #[test]
    fn records_survive_a_reopen_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.journal.jsonl");
        let notices = Notices::new();
        let journal = Journal::open(&path, &notices).unwrap();
        journal
            .record(Record {
                key: "k1".into(),
                label: "one".into(),
                value: json!({"a": 1}),
            })
            .unwrap();
        drop(journal);
        // A kill in the middle of the second record's write.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"key":"k2","label":"tw"#).unwrap();
        drop(file);
        let journal = Journal::open(&path, &notices).unwrap();
        assert_eq!(journal.cached("k1"), Some(json!({"a": 1})));
        assert_eq!(journal.cached("k2"), None);
        assert_eq!(notices.take().len(), 1);
        journal
            .record(Record {
                key: "k2".into(),
                label: "two".into(),
                value: json!("text"),
            })
            .unwrap();
        drop(journal);
        let journal = Journal::open(&path, &notices).unwrap();
        assert_eq!(journal.cached("k2"), Some(json!("text")));
        assert_eq!(journal.len(), 2);
    }
}
