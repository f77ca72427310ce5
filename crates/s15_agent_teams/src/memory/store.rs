//! The store: the `.memory/` directory, written atomically and read
//! defensively.
//!
//! Every write goes through [`shared::fs::write_atomic`] (a temp file, a
//! flush to disk and a rename), so a reader (or a process that crashed
//! mid-write) never sees half a file. A file that does not parse is
//! reported as a notice, naming the file, and skipped: one bad file never
//! hides the others. Every file written is dated with the store's
//! [`Clock`], so that consolidation can tell older memories from newer.

use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use shared::fs::write_atomic;
use shared::notice::Notices;
use shared::sync::LockExt;
use shared::tools::Workspace;

pub use super::file::MEMORY_DIR;
use super::file::{INDEX_FILE, Memory, StoredMemory, slug};
use super::index;
use super::report;
use super::timestamp::Clock;

/// A memory file that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skipping malformed memory file {}: {}",
            self.path.display(),
            self.reason
        )
    }
}

// ANCHOR: store
/// The `.memory/` directory of one workspace. Clones share the set of
/// files already reported as malformed, so each is reported once.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    dir: PathBuf,
    reported: Arc<Mutex<HashSet<PathBuf>>>,
    notices: Notices,
    clock: Clock,
}

impl MemoryStore {
    /// The store of `workspace`. Nothing is created until the first write.
    pub fn in_workspace(workspace: &Workspace) -> Self {
        Self::at(workspace.root().join(MEMORY_DIR))
    }

    /// A store in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            reported: Arc::default(),
            notices: Notices::new(),
            clock: Clock::system(),
        }
    }

    /// The same store, dating the files it writes by `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The same store, reporting malformed files to `notices`.
    pub fn with_notices(mut self, notices: Notices) -> Self {
        self.notices = notices;
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every readable memory, sorted by file name. Malformed files are
    /// skipped, and reported as a notice the first time they are met.
    pub fn list(&self) -> Vec<StoredMemory> {
        let (memories, skipped) = self.scan();
        let mut reported = self.reported.locked();
        for problem in skipped {
            if reported.insert(problem.path.clone()) {
                report::warn(&self.notices, &problem.to_string());
            }
        }
        memories
    }

    /// Every readable memory, and every file that was skipped and why.
    pub fn scan(&self) -> (Vec<StoredMemory>, Vec<Skipped>) {
        let mut memories = Vec::new();
        let mut skipped = Vec::new();
        let Ok(entries) = fs::read_dir(&self.dir) else {
            // No directory yet: no memories.
            return (memories, skipped);
        };
        let mut files: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
            .filter_map(|entry| entry.file_name().into_string().ok())
            // Dot files are our temp files (and editors' swap files); the
            // index is not a memory.
            .filter(|name| name.ends_with(".md") && !name.starts_with('.') && name != INDEX_FILE)
            .collect();
        files.sort();
        for file in files {
            // ANCHOR: exercise-s09-scan
            let path = self.dir.join(&file);
            let parsed = fs::read_to_string(&path)
                .map_err(|error| error.to_string())
                .and_then(|text| Memory::parse(&text).map_err(|error| error.to_string()));
            match parsed {
                Ok((memory, updated)) => memories.push(StoredMemory {
                    file,
                    memory,
                    updated,
                }),
                Err(reason) => skipped.push(Skipped { path, reason }),
            }
            // ANCHOR_END: exercise-s09-scan
        }
        (memories, skipped)
    }

    /// How many readable memories the store holds.
    pub fn count(&self) -> usize {
        self.scan().0.len()
    }

    /// The memory in `file` (a file name as listed, or a memory name), if
    /// it exists and parses.
    pub fn read(&self, file: &str) -> Option<StoredMemory> {
        let file = self.file_for(file);
        let text = fs::read_to_string(self.dir.join(&file)).ok()?;
        let (memory, updated) = Memory::parse(&text).ok()?;
        Some(StoredMemory {
            file,
            memory,
            updated,
        })
    }

    /// Writes `memory` to `<slug of its name>.md` (replacing a memory of
    /// the same name), then rebuilds the index.
    pub fn write(&self, memory: &Memory) -> io::Result<StoredMemory> {
        let stored = self.write_file(memory)?;
        self.rebuild_index()?;
        Ok(stored)
    }

    /// Removes the memory in `file`, then rebuilds the index.
    pub fn remove(&self, file: &str) -> io::Result<()> {
        self.remove_file(file)?;
        self.rebuild_index()
    }

    /// Rewrites `MEMORY.md` from the files on disk.
    pub fn rebuild_index(&self) -> io::Result<()> {
        let memories = self.list();
        write_atomic(&self.dir.join(INDEX_FILE), index::render(&memories))
    }

    /// Writes one memory file, dated now, without touching the index (for
    /// batches, which rebuild it once at the end).
    pub(crate) fn write_file(&self, memory: &Memory) -> io::Result<StoredMemory> {
        let memory = Memory::new(&memory.name, memory.kind, &memory.description, &memory.body);
        let file = memory.file_name();
        let updated = self.clock.now();
        write_atomic(&self.dir.join(&file), memory.to_markdown(updated))?;
        Ok(StoredMemory {
            file,
            memory,
            updated: Some(updated),
        })
    }

    /// Removes one memory file, without touching the index.
    pub(crate) fn remove_file(&self, file: &str) -> io::Result<()> {
        match fs::remove_file(self.dir.join(self.file_for(file))) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        }
    }

    /// The file meant by `file`: itself if it is a plain memory file name
    /// such as a listing returns (hand-written files may have any such
    /// name), else the slug of it plus `.md`. Either way it names a file
    /// directly inside the store, never the index or a temp file.
    fn file_for(&self, file: &str) -> String {
        let plain = file.ends_with(".md")
            && !file.starts_with('.')
            && !file.contains(['/', '\\', ':'])
            && file != INDEX_FILE;
        if plain {
            file.to_string()
        } else {
            format!("{}.md", slug(file.strip_suffix(".md").unwrap_or(file)))
        }
    }
}
// ANCHOR_END: store

// ANCHOR: oldest_first
/// `memories` oldest first, by when their files were last written. A file
/// that does not say counts as older than any that does (it was written
/// by hand, or before memories were dated); ties go by file name.
pub fn oldest_first(mut memories: Vec<StoredMemory>) -> Vec<StoredMemory> {
    memories.sort_by(|a, b| (a.updated, &a.file).cmp(&(b.updated, &b.file)));
    memories
}
// ANCHOR_END: oldest_first
