//! The memory store on disk, without a model: the file format (YAML
//! frontmatter, dated), slugging, the index, atomic writes, malformed files
//! (reported as `memory` notices), de-duplication, the oldest-first order
//! and the deterministic merge.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lesson::memory::consolidate::{CONSOLIDATE_THRESHOLD, deterministic_merge, replace_all};
use lesson::memory::extract::{Extracted, apply, normalise, parse_memories};
use lesson::memory::file::{
    INDEX_FILE, MAX_SLUG_CHARS, MEMORY_DIR, Memory, MemoryType, ParseError, StoredMemory, slug,
};
use lesson::memory::index;
use lesson::memory::store::{MemoryStore, oldest_first};
use lesson::memory::{Clock, Timestamp};
use shared::notice::Notices;
use shared::tools::Workspace;

/// The first time a [`ticking`] clock reads: 2025-03-14T09:26:53Z.
const START: u64 = 1_741_944_413;

/// A clock that reads [`START`], then a minute later at every reading.
fn ticking() -> Clock {
    let readings = Arc::new(AtomicU64::new(0));
    Clock::new(move || {
        let n = readings.fetch_add(1, Ordering::SeqCst);
        UNIX_EPOCH + Duration::from_secs(START + 60 * n)
    })
}

/// The time a [`ticking`] clock reads at its `n`th reading (from 0).
fn tick(n: i64) -> Timestamp {
    Timestamp::from_unix_seconds(START as i64 + 60 * n)
}

/// A store in `dir/.memory` that dates its writes by a [`ticking`] clock.
fn ticking_store(dir: &Path) -> MemoryStore {
    MemoryStore::at(dir.join(".memory")).with_clock(ticking())
}

fn memory(name: &str, kind: MemoryType, description: &str, body: &str) -> Memory {
    Memory::new(name, kind, description, body)
}

fn tabs() -> Memory {
    memory(
        "user-prefers-tabs",
        MemoryType::User,
        "User prefers tabs over spaces for indentation",
        "Indent with tabs.\n**Why:** the user said so.",
    )
}

/// The names of the files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_workspace_keeps_its_memories_in_dot_memory_with_a_memory_md_index() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let store = MemoryStore::in_workspace(&workspace);
    assert_eq!((MEMORY_DIR, INDEX_FILE), (".memory", "MEMORY.md"));
    assert_eq!(store.dir(), workspace.root().join(".memory"));
    // Nothing is created until the first write.
    assert!(store.list().is_empty());
    assert!(!store.dir().exists());

    store.write(&tabs()).unwrap();

    assert_eq!(files_in(store.dir()), ["MEMORY.md", "user-prefers-tabs.md"]);
}

#[test]
fn a_memory_round_trips_through_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = ticking_store(dir.path());

    let stored = store.write(&tabs()).unwrap();

    assert_eq!(stored.file, "user-prefers-tabs.md");
    assert_eq!(stored.updated, Some(tick(0)));
    let text = fs::read_to_string(store.dir().join("user-prefers-tabs.md")).unwrap();
    assert_eq!(
        text,
        "---\nname: user-prefers-tabs\ndescription: User prefers tabs over spaces for indentation\n\
         type: user\nupdated: 2025-03-14T09:26:53Z\n---\n\nIndent with tabs.\n**Why:** the user said so.\n"
    );
    assert_eq!(Memory::parse(&text).unwrap(), (tabs(), Some(tick(0))));
    assert_eq!(store.read("user-prefers-tabs").unwrap(), stored);
    assert_eq!(store.list(), vec![stored]);
}

#[test]
fn writing_a_memory_again_dates_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = ticking_store(dir.path());
    let system = MemoryStore::at(dir.path().join(".memory"));

    store.write(&tabs()).unwrap();
    let rewritten = store.write(&tabs()).unwrap();

    assert_eq!(rewritten.updated, Some(tick(1)));
    assert_eq!(store.list()[0].updated, Some(tick(1)));
    // The store's own clock is the system's.
    let before = Timestamp::from_system_time(SystemTime::now());
    let now = system.write(&tabs()).unwrap().updated.unwrap();
    assert!(now >= before && now > tick(1), "{now}");
    assert!(
        fs::read_to_string(store.dir().join("user-prefers-tabs.md"))
            .unwrap()
            .contains(&format!("\nupdated: {now}\n"))
    );
}

#[test]
fn every_type_and_awkward_values_round_trip() {
    for (kind, name) in [
        (MemoryType::User, "user"),
        (MemoryType::Feedback, "feedback"),
        (MemoryType::Project, "project"),
        (MemoryType::Reference, "reference"),
    ] {
        assert_eq!(MemoryType::parse(name), Some(kind));
        let original = memory(
            "Some Name",
            kind,
            "a description: with a colon,\nand a line break",
            "body with --- inside\n\n---\nand a rule",
        );
        assert_eq!(original.name, "some-name");
        assert_eq!(
            original.description,
            "a description: with a colon, and a line break"
        );
        let text = original.to_markdown(tick(0));
        assert_eq!(
            Memory::parse(&text).unwrap(),
            (original, Some(tick(0))),
            "{text}"
        );
    }
}

#[test]
fn hand_written_files_are_read_leniently() {
    let text = "\u{feff}---\r\nname: \"tabs\"\r\ndescription: 'Tabs, please'\r\n# a comment\r\n\
                tags: [style, editor]\r\ntype: User\r\n---\r\n\r\nTabs.\r\nAlways.\r\n";
    let (parsed, updated) = Memory::parse(text).unwrap();
    assert_eq!(parsed.name, "tabs");
    assert_eq!(parsed.description, "Tabs, please");
    assert_eq!(parsed.kind, MemoryType::User);
    assert_eq!(parsed.body, "Tabs.\nAlways.");
    // No date: read all the same.
    assert_eq!(updated, None);

    // Not YAML (a value with `: ` in it must be quoted there), but plain
    // `key: value` lines, as files were written before: read line by line.
    let legacy = "---\nname: tabs\ndescription: Note: tabs, not spaces\ntype: user\n---\nTabs.\n";
    let (parsed, updated) = Memory::parse(legacy).unwrap();
    assert_eq!(parsed.description, "Note: tabs, not spaces");
    assert_eq!((parsed.body.as_str(), updated), ("Tabs.", None));

    // Numbers and booleans are text to a person; dates in other RFC 3339
    // spellings are read, and one that is no date is as good as none.
    let odd = "---\nname: 2024\ndescription: true\ntype: project\nupdated: 2025-03-14 10:26:53.5+01:00\n---\nx\n";
    let (parsed, updated) = Memory::parse(odd).unwrap();
    assert_eq!(
        (parsed.name.as_str(), parsed.description.as_str()),
        ("2024", "true")
    );
    assert_eq!(updated, Some(tick(0)));
    let undated = odd.replace("2025-03-14 10:26:53.5+01:00", "last Tuesday");
    assert_eq!(Memory::parse(&undated).unwrap().1, None);
}

#[test]
fn multi_line_yaml_values_are_read() {
    let text = "---\n\
                name: deploy-target\n\
                description: |\n  Where deployments go:\n  fly.io, app ledger-prod\n\
                type: >\n  reference\n\
                updated: \"2025-03-14T09:26:53Z\"\n\
                ---\n\nProduction deploys go to fly.io.\n";

    let (memory, updated) = Memory::parse(text).unwrap();

    // The description is one line, as in the index.
    assert_eq!(
        memory.description,
        "Where deployments go: fly.io, app ledger-prod"
    );
    assert_eq!(memory.kind, MemoryType::Reference);
    assert_eq!(memory.body, "Production deploys go to fly.io.");
    assert_eq!(updated, Some(tick(0)));
    // Written back, it is one line, quoted where YAML needs it.
    let written = memory.to_markdown(tick(1));
    assert!(
        written.contains("\ndescription: 'Where deployments go: fly.io, app ledger-prod'\n"),
        "{written}"
    );
    assert_eq!(Memory::parse(&written).unwrap(), (memory, Some(tick(1))));
}

#[test]
fn malformed_files_are_named_and_skipped_while_the_rest_load() {
    let dir = tempfile::tempdir().unwrap();
    let notices = Notices::new();
    let store = MemoryStore::at(dir.path().join(".memory")).with_notices(notices.clone());
    store.write(&tabs()).unwrap();
    let cases = [
        (
            "no-frontmatter.md",
            "just text\n",
            ParseError::NoFrontmatter,
        ),
        (
            "unclosed.md",
            "---\nname: x\ndescription: y\ntype: user\n",
            ParseError::Unclosed,
        ),
        (
            "bad-type.md",
            "---\nname: x\ndescription: y\ntype: opinion\n---\nbody\n",
            ParseError::UnknownType("opinion".into()),
        ),
        (
            "no-name.md",
            "---\ndescription: y\ntype: user\n---\nbody\n",
            ParseError::Missing("name"),
        ),
        (
            "list-description.md",
            "---\nname: x\ndescription:\n  - y\n  - z\ntype: user\n---\nbody\n",
            ParseError::NotText("description"),
        ),
    ];
    for (file, text, error) in &cases {
        fs::write(store.dir().join(file), text).unwrap();
        assert_eq!(Memory::parse(text).unwrap_err(), *error, "{file}");
    }
    // Neither YAML nor `key: value` lines: the YAML parser says where.
    let not_key_value = "---\nname: x\njust words\n---\n";
    fs::write(store.dir().join("not-key-value.md"), not_key_value).unwrap();
    let error = Memory::parse(not_key_value).unwrap_err().to_string();
    assert!(
        error.starts_with("its frontmatter is not valid YAML: ") && error.contains("line 3"),
        "{error}"
    );
    // Not valid UTF-8 at all.
    fs::write(store.dir().join("binary.md"), [0xff, 0xfe, 0x00]).unwrap();

    let (memories, skipped) = store.scan();

    assert_eq!(memories.len(), 1);
    assert_eq!(memories[0].memory, tabs());
    let mut named: Vec<String> = skipped
        .iter()
        .map(|problem| {
            let report = problem.to_string();
            assert!(
                report.starts_with("skipping malformed memory file ")
                    && report.contains(&problem.path.display().to_string()),
                "{report}"
            );
            problem
                .path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            "bad-type.md",
            "binary.md",
            "list-description.md",
            "no-frontmatter.md",
            "no-name.md",
            "not-key-value.md",
            "unclosed.md"
        ]
    );
    // `scan` only reports; `list` also warns, once per file, however often
    // it is called, as a `memory` notice that names the file.
    assert!(notices.take().is_empty());
    assert_eq!(store.list(), memories);
    assert_eq!(store.list(), memories);
    let warnings = notices.take();
    assert_eq!(warnings.len(), 7, "{warnings:?}");
    for (warning, file) in warnings.iter().zip(&named) {
        assert_eq!(warning.tag, "memory");
        assert!(
            warning
                .text
                .starts_with("warning: skipping malformed memory file ")
                && warning.text.contains(file.as_str()),
            "{warning:?}"
        );
    }
    // A clone of the store shares what was already reported.
    assert_eq!(store.clone().list(), memories);
    assert!(notices.take().is_empty());
    // The index lists only the good memory.
    store.rebuild_index().unwrap();
    assert_eq!(index::render(&store.list()), index::render(&memories));
    assert_eq!(
        fs::read_to_string(store.dir().join("MEMORY.md")).unwrap(),
        "- user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md\n"
    );
}

#[test]
fn slugs_keep_every_name_inside_the_store() {
    let cases = [
        ("../../etc/passwd", "etc-passwd"),
        ("a/b", "a-b"),
        ("a\\b", "a-b"),
        ("User Prefers  Tabs!", "user-prefers-tabs"),
        ("--x--", "x"),
        ("Préférence tabs", "pr-f-rence-tabs"),
        ("memory", "memory-note"),
        ("MEMORY", "memory-note"),
    ];
    for (name, expected) in cases {
        assert_eq!(slug(name), expected, "{name:?}");
    }
    // Nothing usable left: a stable name derived from a hash, distinct for
    // distinct inputs.
    for name in ["", "..", ".", "/", "日本語", "中文"] {
        let slugged = slug(name);
        assert!(slugged.starts_with("memory-"), "{name:?} -> {slugged}");
        assert_eq!(slugged, slug(name));
    }
    assert_ne!(slug("日本語"), slug("中文"));
    assert_ne!(slug(""), slug(".."));
    let long = slug(&"abc-".repeat(100));
    assert!(
        long.len() <= MAX_SLUG_CHARS && !long.ends_with('-'),
        "{long}"
    );
    for name in ["x".repeat(200), "日".repeat(100) + "a"] {
        let slugged = slug(&name);
        assert!(
            slugged.len() <= MAX_SLUG_CHARS
                && slugged
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{slugged}"
        );
    }
}

#[test]
fn hostile_names_are_written_inside_the_store_and_nowhere_else() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    fs::create_dir(&workspace).unwrap();
    let store = MemoryStore::at(workspace.join(".memory"));

    for name in [
        "../../etc/passwd",
        "../escape",
        "a/b",
        "..",
        "",
        "日本語",
        "/abs/path",
    ] {
        let stored = store
            .write(&Memory {
                name: name.to_string(),
                description: "d".into(),
                kind: MemoryType::Project,
                body: format!("body of {name:?}"),
            })
            .unwrap();
        let path = store.dir().join(&stored.file);
        assert_eq!(path.parent().unwrap(), store.dir(), "{name:?}");
        assert!(path.is_file(), "{name:?}");
        assert!(!stored.file.starts_with('.'), "{name:?}");
    }

    // Nothing appeared beside the workspace or inside it but the store.
    assert_eq!(files_in(root.path()), ["ws"]);
    assert_eq!(files_in(&workspace), [".memory"]);
    assert_eq!(store.list().len(), 7);
}

#[test]
fn the_index_is_rebuilt_on_every_write_and_removal() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::at(dir.path().join(".memory"));
    let index_text = || fs::read_to_string(store.dir().join("MEMORY.md")).unwrap();

    store.write(&tabs()).unwrap();
    store
        .write(&memory(
            "auth-rewrite",
            MemoryType::Project,
            "The auth rewrite is driven by compliance",
            "Legal flagged session tokens.",
        ))
        .unwrap();
    assert_eq!(
        index_text(),
        "- auth-rewrite — The auth rewrite is driven by compliance — auth-rewrite.md\n\
         - user-prefers-tabs — User prefers tabs over spaces for indentation — user-prefers-tabs.md\n"
    );

    // An update changes its line in place.
    store
        .write(&memory(
            "user-prefers-tabs",
            MemoryType::User,
            "Tabs, width 4",
            "Tabs.",
        ))
        .unwrap();
    assert!(
        index_text().contains("- user-prefers-tabs — Tabs, width 4 — user-prefers-tabs.md\n"),
        "{}",
        index_text()
    );

    store.remove("auth-rewrite.md").unwrap();
    assert_eq!(
        index_text(),
        "- user-prefers-tabs — Tabs, width 4 — user-prefers-tabs.md\n"
    );
    assert_eq!(
        index::read(store.dir()).unwrap(),
        "- user-prefers-tabs — Tabs, width 4 — user-prefers-tabs.md"
    );
}

#[test]
fn writes_leave_no_temp_files_and_a_crashed_temp_file_corrupts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::at(dir.path().join(".memory"));
    store.write(&tabs()).unwrap();
    let good = fs::read_to_string(store.dir().join("user-prefers-tabs.md")).unwrap();

    // A process died half-way through writing a new version: its temp file
    // holds a truncated copy.
    let partial = &good[..good.len() / 2];
    fs::write(
        store.dir().join(".user-prefers-tabs.md.tmp-99999-0"),
        partial,
    )
    .unwrap();
    fs::write(store.dir().join(".MEMORY.md.tmp-99999-1"), "- garbage").unwrap();

    // The store still reads the whole old version, and lists nothing else.
    let (memories, skipped) = store.scan();
    assert_eq!(memories.len(), 1);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(store.read("user-prefers-tabs").unwrap().memory, tabs());

    // Later writes work, and leave no temp files of their own.
    for n in 0..5 {
        store
            .write(&memory(
                &format!("fact-{n}"),
                MemoryType::Project,
                "d",
                &format!("fact {n}"),
            ))
            .unwrap();
    }
    let leftovers: Vec<String> = files_in(store.dir())
        .into_iter()
        .filter(|name| name.starts_with('.'))
        .collect();
    assert_eq!(
        leftovers,
        [
            ".MEMORY.md.tmp-99999-1",
            ".user-prefers-tabs.md.tmp-99999-0"
        ]
    );
    assert!(
        !fs::read_to_string(store.dir().join("MEMORY.md"))
            .unwrap()
            .contains("garbage")
    );
}

#[test]
fn a_failed_write_keeps_the_store_as_it_was_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::at(dir.path().join(".memory"));
    store.write(&tabs()).unwrap();
    let index_before = fs::read_to_string(store.dir().join("MEMORY.md")).unwrap();
    // The file a new memory would be written to is taken by a directory,
    // so the final rename of the atomic write must fail.
    let target = store.dir().join("deploy-target.md");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("inside.txt"), "keep").unwrap();

    let deploy = memory(
        "deploy-target",
        MemoryType::Project,
        "Deploys go to fly.io",
        "fly.io",
    );
    assert!(store.write(&deploy).is_err());

    assert_eq!(
        fs::read_to_string(target.join("inside.txt")).unwrap(),
        "keep"
    );
    assert_eq!(
        files_in(store.dir()),
        ["MEMORY.md", "deploy-target.md", "user-prefers-tabs.md"]
    );
    assert_eq!(
        fs::read_to_string(store.dir().join("MEMORY.md")).unwrap(),
        index_before
    );
    assert_eq!(store.list().len(), 1);
}

#[test]
fn apply_creates_updates_and_never_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::at(dir.path().join(".memory"));

    // Nothing to write: not even the directory appears.
    assert_eq!(apply(&store, &[]).unwrap(), Extracted::default());
    assert!(!store.dir().exists());

    let first = apply(&store, &[tabs()]).unwrap();
    assert_eq!(first.created, ["user-prefers-tabs"]);

    let modified = |path: &str| {
        fs::metadata(store.dir().join(path))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = (modified("user-prefers-tabs.md"), modified("MEMORY.md"));

    // The same memory again, reworded only in case and punctuation, and the
    // same body under another name, within one batch: nothing is written.
    let again = apply(
        &store,
        &[
            memory(
                "User Prefers Tabs",
                MemoryType::User,
                "user prefers tabs over spaces, for indentation.",
                "indent with TABS.  **Why:** the user said so",
            ),
            memory(
                "indentation-style",
                MemoryType::Feedback,
                "How to indent",
                "Indent with tabs! Why: the user said so.",
            ),
        ],
    )
    .unwrap();
    assert!(
        again.created.is_empty() && again.updated.is_empty(),
        "{again:?}"
    );
    assert_eq!(again.unchanged, 2);
    assert_eq!(
        (modified("user-prefers-tabs.md"), modified("MEMORY.md")),
        before
    );
    assert_eq!(store.list().len(), 1);

    // Same name, new content: the one file is updated.
    let update = apply(
        &store,
        &[memory(
            "user-prefers-tabs",
            MemoryType::User,
            "User prefers tabs, displayed 4 wide",
            "Indent with tabs; the user's editor shows them 4 wide.",
        )],
    )
    .unwrap();
    assert_eq!(update.updated, ["user-prefers-tabs"]);
    let all = store.list();
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].memory.description,
        "User prefers tabs, displayed 4 wide"
    );

    // A batch naming one new memory twice writes one file.
    let twice = memory(
        "deploy-target",
        MemoryType::Project,
        "Deploys go to fly.io",
        "fly.io",
    );
    let report = apply(&store, &[twice.clone(), twice]).unwrap();
    assert_eq!(report.created, ["deploy-target"]);
    assert_eq!(report.unchanged, 1);
    assert_eq!(store.list().len(), 2);
    assert_eq!(
        fs::read_to_string(store.dir().join("MEMORY.md"))
            .unwrap()
            .lines()
            .count(),
        2
    );
}

#[test]
fn extraction_answers_are_read_leniently_and_bad_items_refused() {
    let answer = "Here you go:\n```json\n[\n  {\"name\": \"Tabs\", \"type\": \"USER\", \"description\": \"Tabs\", \"body\": \"Use tabs.\"},\n  {\"name\": \"x\", \"type\": \"opinion\", \"body\": \"b\"},\n  {\"type\": \"user\", \"body\": \"no name\"},\n  \"just a string\",\n  {\"name\": \"only-body\", \"type\": \"project\", \"body\": \"The API lives in api/.\"}\n]\n```";
    let (memories, refused) = parse_memories(answer).unwrap();
    assert_eq!(memories.len(), 2);
    assert_eq!(memories[0].name, "tabs");
    assert_eq!(memories[0].kind, MemoryType::User);
    // A missing description is filled from the body.
    assert_eq!(memories[1].description, "The API lives in api/.");
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused[0].contains("type must be one of"), "{refused:?}");

    assert!(parse_memories("Nothing new to remember.").is_err());
    assert_eq!(parse_memories("[]").unwrap().0, vec![]);
    assert_eq!(normalise("Use  TABS, not spaces!"), "use tabs not spaces");
}

#[test]
fn the_deterministic_merge_loses_nothing_and_stays_under_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::at(dir.path().join(".memory"));
    let kinds = [
        MemoryType::User,
        MemoryType::Feedback,
        MemoryType::Project,
        MemoryType::Reference,
    ];
    for n in 0..11 {
        store
            .write(&memory(
                &format!("fact-{n:02}"),
                kinds[n % 3],
                &format!("description {n}"),
                &format!("Body number {n}."),
            ))
            .unwrap();
    }
    // Two exact duplicates under other names.
    store
        .write(&memory("copy-a", MemoryType::User, "d", "body NUMBER 0"))
        .unwrap();
    store
        .write(&memory(
            "lonely-ref",
            MemoryType::Reference,
            "Where logs are",
            "Logs: /var/log/app",
        ))
        .unwrap();

    let merged = deterministic_merge(&store.list());

    assert!(merged.len() < CONSOLIDATE_THRESHOLD, "{merged:?}");
    assert_eq!(merged.len(), 4);
    let all_text = normalise(
        &merged
            .iter()
            .map(|memory| memory.to_markdown(tick(0)))
            .collect::<String>(),
    );
    for n in 1..11 {
        assert!(all_text.contains(&format!("body number {n} ")), "{n}");
    }
    assert!(all_text.contains("logs var log app"));
    // Of the two copies of body 0, one was kept and the other dropped.
    assert_eq!(all_text.matches("body number 0 ").count(), 1, "{all_text}");
    // A type with one memory keeps it as it was.
    assert!(merged.iter().any(|memory| memory.name == "lonely-ref"));
    assert!(merged.iter().any(|memory| memory.name == "user-memories"));

    // Below the threshold after dropping duplicates: nothing is merged.
    let few: Vec<_> = store.list().into_iter().skip(2).take(3).collect();
    let kept = deterministic_merge(&few);
    assert_eq!(kept.len(), 3);
}

#[test]
fn a_hand_named_file_is_updated_in_place_of_a_second_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::at(dir.path().join(".memory"));
    fs::create_dir_all(store.dir()).unwrap();
    fs::write(
        store.dir().join("My_Tabs.md"),
        "---\nname: user-prefers-tabs\ndescription: Tabs\ntype: user\n---\nTabs.\n",
    )
    .unwrap();
    assert_eq!(store.read("My_Tabs.md").unwrap().memory.body, "Tabs.");

    let report = apply(&store, &[tabs()]).unwrap();

    assert_eq!(report.updated, ["user-prefers-tabs"]);
    assert_eq!(files_in(store.dir()), ["MEMORY.md", "user-prefers-tabs.md"]);
}

#[test]
fn reads_and_removals_never_leave_the_store() {
    let root = tempfile::tempdir().unwrap();
    let store = MemoryStore::at(root.path().join("ws/.memory"));
    store.write(&tabs()).unwrap();
    // A memory-looking file beside the store, which a path escape would hit.
    fs::write(
        root.path().join("ws/outside.md"),
        tabs().to_markdown(tick(0)),
    )
    .unwrap();

    assert!(store.read("../outside.md").is_none());
    store.remove("../outside.md").unwrap();
    store.remove("MEMORY.md").unwrap();

    assert!(root.path().join("ws/outside.md").exists());
    assert!(store.dir().join("MEMORY.md").exists());
    assert_eq!(store.list().len(), 1);
}

// --- Oldest first ---------------------------------------------------------

/// `name` as stored in `file`, last written at `updated`.
fn stored(file: &str, body: &str, updated: Option<Timestamp>) -> StoredMemory {
    let name = file.trim_end_matches(".md");
    StoredMemory {
        file: file.to_string(),
        memory: memory(name, MemoryType::User, &format!("About {name}"), body),
        updated,
    }
}

#[test]
fn memories_sort_oldest_first_and_undated_ones_count_as_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let store = ticking_store(dir.path());
    // Written in an order that is not the names' order.
    for name in ["c-third", "a-fourth", "b-fifth"] {
        store
            .write(&memory(name, MemoryType::Project, "d", name))
            .unwrap();
    }
    // Two files from before memories were dated.
    for name in ["z-first", "y-second"] {
        fs::write(
            store.dir().join(format!("{name}.md")),
            format!("---\nname: {name}\ndescription: d\ntype: user\n---\n{name}\n"),
        )
        .unwrap();
    }

    let listed: Vec<String> = store.list().into_iter().map(|s| s.file).collect();
    let ordered: Vec<String> = oldest_first(store.list())
        .into_iter()
        .map(|s| s.file)
        .collect();

    // The store lists by name; oldest first is by date, undated first (by
    // name among themselves).
    assert_eq!(
        listed,
        [
            "a-fourth.md",
            "b-fifth.md",
            "c-third.md",
            "y-second.md",
            "z-first.md"
        ]
    );
    assert_eq!(
        ordered,
        [
            "y-second.md",
            "z-first.md",
            "c-third.md",
            "a-fourth.md",
            "b-fifth.md"
        ]
    );
}

#[test]
fn updating_a_memory_dates_it_and_an_unchanged_one_keeps_its_date() {
    let dir = tempfile::tempdir().unwrap();
    let store = ticking_store(dir.path());
    apply(&store, &[tabs()]).unwrap();
    assert_eq!(store.list()[0].updated, Some(tick(0)));

    // The same memory again: not written, so not dated again.
    apply(&store, &[tabs()]).unwrap();
    assert_eq!(store.list()[0].updated, Some(tick(0)));

    // New content under the name: written, and dated now.
    let update = memory(
        "user-prefers-tabs",
        MemoryType::User,
        "Tabs, 4 wide",
        "Indent with tabs shown 4 wide.",
    );
    apply(&store, &[update]).unwrap();
    assert_eq!(store.list()[0].updated, Some(tick(1)));
}

#[test]
fn consolidation_rewrites_and_redates_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let store = ticking_store(dir.path());
    let deploy = memory("deploy-target", MemoryType::Project, "Deploys", "fly.io");
    store.write(&tabs()).unwrap();
    store.write(&deploy).unwrap();
    store
        .write(&memory("old-note", MemoryType::User, "d", "x"))
        .unwrap();
    let old = store.list();

    let moved = memory(
        "deploy-target",
        MemoryType::Project,
        "Deploys",
        "Now on k8s.",
    );
    replace_all(&store, &old, &[tabs(), moved]).unwrap();

    let dates: Vec<(String, Option<Timestamp>)> = store
        .list()
        .into_iter()
        .map(|stored| (stored.file, stored.updated))
        .collect();
    assert_eq!(
        dates,
        [
            ("deploy-target.md".to_string(), Some(tick(3))),
            ("user-prefers-tabs.md".to_string(), Some(tick(0))),
        ]
    );
}

#[test]
fn in_the_deterministic_merge_the_later_statement_wins() {
    // Listed by name, as the store lists them; written in another order.
    let listed = [
        stored("a-spaces.md", "Indent with spaces.", Some(tick(5))),
        stored("b-tabs.md", "Indent with tabs.", Some(tick(2))),
        stored("c-undated.md", "Wrap at 100 columns.", None),
        stored("d-tabs-again.md", "indent with TABS", Some(tick(3))),
    ];

    // Below the threshold: only duplicates go, and of two copies the later
    // is kept (d-tabs-again, not b-tabs), in oldest-first order.
    let kept = deterministic_merge(&listed);
    let names: Vec<&str> = kept.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["c-undated", "d-tabs-again", "a-spaces"]);

    // At the threshold: one memory, its sections oldest first under a line
    // that says the later one holds, so "spaces" (the latest) comes last.
    let mut many: Vec<StoredMemory> = listed.to_vec();
    for n in 0..8 {
        many.push(stored(
            &format!("fact-{n}.md"),
            &format!("Fact {n}."),
            Some(tick(10 + n)),
        ));
    }
    let merged = deterministic_merge(&many);
    assert_eq!(merged.len(), 1, "{merged:?}");
    let body = &merged[0].body;
    assert!(
        body.starts_with(
            "Merged from 11 memories, oldest first; where two sections disagree, the later one holds."
        ),
        "{body}"
    );
    let at = |text: &str| body.find(text).unwrap_or_else(|| panic!("{text}: {body}"));
    assert!(at("### c-undated (undated)") < at("### d-tabs-again (2025-03-14T09:29:53Z)"));
    assert!(at("indent with TABS") < at("Indent with spaces."));
    assert!(at("Indent with spaces.") < at("Fact 0."));
    assert!(!body.contains("b-tabs"), "{body}");
}
