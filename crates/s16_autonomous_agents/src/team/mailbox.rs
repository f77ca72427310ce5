//! One agent's inbox on disk, shared by every thread and process that
//! sends to it or reads it.
//!
//! The files, in the mailbox directory (`.mailboxes/`):
//!
//! * `<name>.jsonl` — the inbox: one JSON message per line, appended.
//! * `<name>.lock` — locked exclusively (`File::lock`, an `flock` on Unix)
//!   around every change to the inbox, so an append and a take never
//!   interleave, across threads and processes alike. It is never deleted:
//!   deleting a lock file lets two holders lock two different files.
//! * `<name>.inflight-<n>.jsonl` — messages taken but not yet committed.
//!
//! **Appending** writes the whole line with one `write_all` under the lock,
//! then `sync_data`, so once `append` returns the line is on disk. A writer
//! killed mid-write can still leave half a line without its newline; the
//! next append sees that the file does not end in a newline and ends the
//! torn line first, so the torn line cannot swallow the next message, and
//! the reader reports it and skips it.
//!
//! **Taking** is two steps, so a crash between them loses nothing. Under
//! the lock, [`Mailbox::take`] renames the inbox to a new inflight file and
//! returns its messages in a [`Taken`] guard, which also holds an exclusive
//! lock on that inflight file. Appends after that go to a fresh inbox. Once
//! the caller has handled the messages it calls [`Taken::commit`], which
//! deletes the inflight file. If the caller dies first, or drops the guard
//! without committing, the operating system releases the inflight file's
//! lock; the next take finds an unlocked inflight file, knows its taker is
//! gone, and delivers it again, before the newer inbox. An inflight file
//! that is still locked belongs to a live consumer, so the take refuses
//! ([`BusError::Busy`]) rather than deliver the same messages twice or out
//! of order.
//!
//! So on disk every appended message is delivered **at least once**: it
//! leaves the disk only when a commit deletes it. Redeliveries carry the
//! same ids, and the bus drops ids its consumer already handled (see
//! `bus.rs`).

use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::BusError;
use super::message::{Message, validate_name};

/// One agent's mailbox in a mailbox directory. Cheap: nothing touches the
/// disk until it is used.
#[derive(Debug, Clone)]
pub struct Mailbox {
    dir: PathBuf,
    name: String,
}

/// A line of a mailbox file that was not a message, and why. It is skipped;
/// the lines after it are still delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file it was in (`alice.inflight-1.jsonl`).
    pub file: String,
    /// Its line number, from 1.
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} line {}: {}", self.file, self.line, self.reason)
    }
}

/// An inflight file this taker holds, and the open file whose lock says so.
#[derive(Debug)]
struct Claimed {
    path: PathBuf,
    // Closing it releases the lock, which marks the file as abandoned.
    file: File,
}

/// Messages taken from a mailbox, still on disk until [`Taken::commit`].
///
/// Dropping it without committing is what a crash does: the messages stay
/// in their inflight file and the next take delivers them again.
#[derive(Debug)]
#[must_use = "messages stay on disk and come back until the take is committed"]
pub struct Taken {
    /// The messages, oldest first: redelivered ones, then the inbox's.
    pub messages: Vec<Message>,
    /// Lines that were not messages.
    pub skipped: Vec<Skipped>,
    mailbox: Mailbox,
    files: Vec<Claimed>,
}

impl Taken {
    /// Says the messages are handled: deletes their inflight files. Under
    /// the mailbox lock, so a concurrent take never finds a file half gone.
    pub fn commit(self) -> Result<(), BusError> {
        if self.files.is_empty() {
            return Ok(());
        }
        let _lock = self.mailbox.lock()?;
        for claim in &self.files {
            match fs::remove_file(&claim.path) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(BusError::io("remove", &claim.path)(error)),
            }
        }
        Ok(())
    }
}

impl Mailbox {
    /// The mailbox of agent `name` in `dir`, once the name is checked.
    pub fn new(dir: impl Into<PathBuf>, name: &str) -> Result<Self, BusError> {
        validate_name(name)?;
        Ok(Self {
            dir: dir.into(),
            name: name.to_string(),
        })
    }

    /// The agent whose mailbox this is.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The inbox file, `<dir>/<name>.jsonl`.
    pub fn inbox_path(&self) -> PathBuf {
        self.dir.join(format!("{}.jsonl", self.name))
    }

    fn lock_path(&self) -> PathBuf {
        self.dir.join(format!("{}.lock", self.name))
    }

    fn inflight_prefix(&self) -> String {
        format!("{}.inflight-", self.name)
    }

    // ANCHOR: append
    /// Appends `message` as one line, durably: when this returns, the line
    /// is on disk, and no crash of any process can take it back.
    pub fn append(&self, message: &Message) -> Result<(), BusError> {
        if message.to != self.name {
            return Err(BusError::Misaddressed {
                id: message.id.clone(),
                to: message.to.clone(),
                mailbox: self.name.clone(),
            });
        }
        if message.id.is_empty() {
            return Err(BusError::MissingId {
                from: message.from.clone(),
                to: message.to.clone(),
            });
        }
        let line = message.to_line().map_err(|source| BusError::Encode {
            id: message.id.clone(),
            source,
        })?;

        // ANCHOR: exercise-s15-append
        let _lock = self.lock()?;
        let path = self.inbox_path();
        let failed = |action| BusError::io(action, &path);
        // Opened under the lock, never kept: a take may have renamed the
        // previous inbox away, and this append belongs in the new one.
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(failed("open"))?;
        let len = file.metadata().map_err(failed("read the size of"))?.len();
        let mut bytes = Vec::with_capacity(line.len() + 1);
        if len > 0 && !ends_with_newline(&mut file).map_err(failed("read the end of"))? {
            // A writer died mid-line. End its line, so it is skipped alone
            // instead of running into this message.
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        // One write of the whole line, then to disk before returning.
        file.write_all(&bytes).map_err(failed("append to"))?;
        file.sync_data().map_err(failed("flush"))?;
        if len == 0 {
            // A new file's name must reach the disk too.
            sync_dir(&self.dir).map_err(BusError::io("flush", &self.dir))?;
        }
        Ok(())
        // ANCHOR_END: exercise-s15-append
    }
    // ANCHOR_END: append

    // ANCHOR: take
    /// Takes every message in the mailbox, including any a crashed taker
    /// left behind, in order. They stay on disk until [`Taken::commit`].
    ///
    /// Fails with [`BusError::Busy`] while another consumer (thread or
    /// process) holds an uncommitted take of this mailbox.
    pub fn take(&self) -> Result<Taken, BusError> {
        let _lock = self.lock()?;
        let mut files = Vec::new();
        let mut next = 1;

        // Inflight files first: they are older than anything in the inbox.
        // One whose lock we can take has lost its taker.
        for (number, path) in self.inflight_files()? {
            next = next.max(number + 1);
            let file = File::open(&path).map_err(BusError::io("open", &path))?;
            match file.try_lock() {
                Ok(()) => files.push(Claimed { path, file }),
                Err(TryLockError::WouldBlock) => {
                    return Err(BusError::Busy {
                        name: self.name.clone(),
                    });
                }
                Err(TryLockError::Error(error)) => return Err(BusError::io("lock", &path)(error)),
            }
        }

        // Then the inbox, renamed so that later appends start a new one.
        // Its number is above every inflight file's, so that a later take
        // reads them oldest first.
        // It is locked before the rename, so no other taker can ever see
        // it under its inflight name without an owner.
        let inbox = self.inbox_path();
        match File::open(&inbox) {
            Ok(file) => {
                file.lock().map_err(BusError::io("lock", &inbox))?;
                let path = self
                    .dir
                    .join(format!("{}{next}.jsonl", self.inflight_prefix()));
                fs::rename(&inbox, &path).map_err(BusError::io("rename", &inbox))?;
                files.push(Claimed { path, file });
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(BusError::io("open", &inbox)(error)),
        }

        let mut messages = Vec::new();
        let mut skipped = Vec::new();
        for claim in &files {
            let mut bytes = Vec::new();
            // Read through the locked handle: on Windows a locked file
            // cannot be read through another one.
            (&claim.file)
                .read_to_end(&mut bytes)
                .map_err(BusError::io("read", &claim.path))?;
            let file = claim
                .path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            parse_lines(&file, &bytes, &mut messages, &mut skipped);
        }
        Ok(Taken {
            messages,
            skipped,
            mailbox: self.clone(),
            files,
        })
    }
    // ANCHOR_END: take

    /// Whether there is nothing to take: no inbox with content and no
    /// inflight file. Cheap (a `stat` and a directory listing), for polling.
    pub fn is_empty(&self) -> Result<bool, BusError> {
        let inbox = self.inbox_path();
        match fs::metadata(&inbox) {
            Ok(meta) if meta.len() > 0 => return Ok(false),
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(BusError::io("read the size of", &inbox)(error)),
        }
        Ok(self.inflight_files()?.is_empty())
    }

    /// Takes the mailbox's lock, waiting for it. Blocks the thread for at
    /// most one append or take of another holder.
    fn lock(&self) -> Result<File, BusError> {
        fs::create_dir_all(&self.dir).map_err(BusError::io("create", &self.dir))?;
        let path = self.lock_path();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(BusError::io("open", &path))?;
        file.lock().map_err(BusError::io("lock", &path))?;
        Ok(file)
    }

    /// This mailbox's inflight files, oldest (lowest number) first.
    fn inflight_files(&self) -> Result<Vec<(u64, PathBuf)>, BusError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(BusError::io("list", &self.dir)(error)),
        };
        let prefix = self.inflight_prefix();
        let mut files: Vec<(u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name();
                let number = name
                    .to_str()?
                    .strip_prefix(&prefix)?
                    .strip_suffix(".jsonl")?
                    .parse()
                    .ok()?;
                Some((number, entry.path()))
            })
            .collect();
        files.sort_unstable();
        Ok(files)
    }
}

/// The agents that have a mailbox in `dir`, sorted. A mailbox exists once
/// something was sent to it: its lock file is created then and never
/// removed, while its inbox comes and goes with every take.
pub fn names(dir: &Path) -> Result<Vec<String>, BusError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(BusError::io("list", dir)(error)),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry
                .file_name()
                .to_str()?
                .strip_suffix(".lock")?
                .to_string();
            validate_name(&name).is_ok().then_some(name)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// Reads the messages of one file's bytes, skipping (and reporting) any
/// line that is not one.
fn parse_lines(file: &str, bytes: &[u8], messages: &mut Vec<Message>, skipped: &mut Vec<Skipped>) {
    let count = bytes.split(|byte| *byte == b'\n').count();
    for (index, line) in bytes.split(|byte| *byte == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Message>(line) {
            Ok(message) => messages.push(message),
            Err(error) => {
                // Takes and appends exclude each other, so a last line
                // without its newline was left by a writer that died.
                let reason = if index + 1 == count {
                    format!("torn line at the end (its writer died mid-append): {error}")
                } else {
                    format!("not a message: {error}")
                };
                skipped.push(Skipped {
                    file: file.to_string(),
                    line: index + 1,
                    reason,
                });
            }
        }
    }
}

/// Whether the last byte of a non-empty `file` is a newline.
fn ends_with_newline(file: &mut File) -> io::Result<bool> {
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1))?;
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Flushes a directory's entries to disk. Unix only: other systems cannot
/// open a directory as a file, and make new names durable on their own.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
