//! `write_atomic` under fire: a writer in another process rewrites one file
//! over and over and is killed with SIGKILL at random moments, many times,
//! while a reader in this process keeps reading the file. Every read, during
//! the writes and after each kill, must find one complete version: never a
//! mix of two, never an empty file, never no file once it was created.
//!
//! The writer is this test binary run again (`std::env::current_exe()`)
//! with only the ignored test [`writer_process`] selected; environment
//! variables tell it where to write and how. Run with the plain
//! `std::fs::write` instead, the same harness catches a torn or empty file,
//! which shows it can see the failure it guards against.
//!
//! Nothing here measures time: the loops are bounded by counts, and the
//! short random pauses only spread the kills over the writer's steps.

// Helpers outside `#[test]` functions unwrap too: a failed setup should
// fail the test on the spot.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::{BufRead, BufReader, Lines, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use shared::fs::write_atomic;

/// Where the writer process writes; without it, [`writer_process`] does
/// nothing (so `cargo test -- --ignored` does not hang on it).
const TARGET_VAR: &str = "SHARED_ATOMIC_WRITE_TARGET";
/// Set to write with `std::fs::write` instead of `write_atomic`.
const PLAIN_VAR: &str = "SHARED_ATOMIC_WRITE_PLAIN";
/// Which version the writer starts with (0 or 1).
const FIRST_VAR: &str = "SHARED_ATOMIC_WRITE_FIRST";
/// The line the writer prints after each complete write.
const WROTE: &str = "atomic-write-test: wrote ";

/// Big enough that writing it takes the kernel a while and a plain write
/// can be caught half done.
const SIZE: usize = 256 * 1024;
/// How many times the writer process is killed.
const KILLS: usize = 50;
/// A writer nobody kills (its test died first) stops after this many writes.
const MAX_WRITES: usize = 2_000;

/// Version `n` of the file: a letter per version, and a line number on each
/// line, so that any mix of the two, or any part of one, differs from both.
fn version(n: usize) -> Vec<u8> {
    let letter = if n.is_multiple_of(2) { 'A' } else { 'B' };
    let mut contents = String::with_capacity(SIZE);
    let mut line = 0;
    while contents.len() < SIZE {
        contents.push_str(&format!(
            "{letter}{line:07} {}\n",
            letter.to_string().repeat(54)
        ));
        line += 1;
    }
    contents.truncate(SIZE);
    contents.into_bytes()
}

/// Not a test on its own: the writer process the tests below start. It
/// rewrites the file named by [`TARGET_VAR`] with the two versions in
/// turn, printing a line after each write, until it is killed.
#[test]
#[ignore = "the writer process of the atomic-write tests, which start it themselves"]
fn writer_process() {
    let Some(target) = std::env::var_os(TARGET_VAR) else {
        return;
    };
    let target = PathBuf::from(target);
    let plain = std::env::var_os(PLAIN_VAR).is_some();
    let first: usize = std::env::var(FIRST_VAR)
        .ok()
        .and_then(|first| first.parse().ok())
        .unwrap_or(0);
    let versions = [version(0), version(1)];
    let mut stdout = std::io::stdout().lock();
    for round in 0..MAX_WRITES {
        let contents = &versions[(first + round) % 2];
        if plain {
            fs::write(&target, contents).unwrap();
        } else {
            write_atomic(&target, contents).unwrap();
        }
        writeln!(stdout, "{WROTE}{round}").unwrap();
        stdout.flush().unwrap();
    }
}

/// A small random number generator (xorshift), seeded from the standard
/// library's hash seed: enough to scatter kills, no extra dependency.
struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        use std::hash::BuildHasher;
        Self(std::collections::hash_map::RandomState::new().hash_one(0u8) | 1)
    }

    /// A number in `0..bound`.
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// A running writer process, killed when dropped (so a failing test does
/// not leave it behind).
struct Writer {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Writer {
    fn start(target: &Path, plain: bool, first: usize) -> Self {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "atomic_write::writer_process",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(TARGET_VAR, target)
            .env(FIRST_VAR, first.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if plain {
            command.env(PLAIN_VAR, "1");
        }
        let mut child = command.spawn().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines }
    }

    /// Waits until the writer reports `count` more complete writes.
    fn wait_for_writes(&mut self, count: usize) {
        let mut seen = 0;
        while seen < count {
            let line = self
                .lines
                .next()
                .expect("the writer stopped before it was killed")
                .unwrap();
            if line.starts_with(WROTE) {
                seen += 1;
            }
        }
    }

    /// Kills the writer with SIGKILL; true if it was still running, so the
    /// kill really interrupted it.
    fn kill(&mut self) -> bool {
        let running = self.child.try_wait().unwrap().is_none();
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        running
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one read of the file found wrong, if anything.
fn check(path: &Path, versions: &[Vec<u8>; 2]) -> Result<usize, String> {
    match fs::read(path) {
        Ok(bytes) => versions
            .iter()
            .position(|version| *version == bytes)
            .ok_or_else(|| match bytes.first() {
                None => "the file was empty".to_string(),
                Some(&first) => format!(
                    "the file held {} bytes starting with {:?}, neither version",
                    bytes.len(),
                    first as char
                ),
            }),
        Err(error) => Err(format!("the file could not be read: {error}")),
    }
}

/// How many wrong reads a report keeps word for word (a plain writer makes
/// thousands).
const KEEP: usize = 10;

/// What a run of the harness saw.
#[derive(Debug, Default)]
struct Report {
    /// How many reads found the file wrong, from the reader thread or after
    /// a kill, and the first few of them.
    violation_count: usize,
    violations: Vec<String>,
    /// Kills that hit a writer still running.
    kills_mid_run: usize,
    /// Reads the reader thread made while writers ran, and how many found
    /// each version.
    concurrent_reads: usize,
    seen: [usize; 2],
}

impl Report {
    fn add(&mut self, problem: String) {
        self.violation_count += 1;
        if self.violations.len() < KEEP {
            self.violations.push(problem);
        }
    }
}

/// Starts a writer `kills` times in a fresh directory, lets it complete a
/// few writes and some of the next, kills it, and checks the file after
/// each kill; a reader thread checks it all along. With `stop_early`, ends
/// at the first violation.
fn hammer(plain: bool, kills: usize, stop_early: bool) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("state.json");
    let versions = Arc::new([version(0), version(1)]);
    let created = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    // The reader's count of wrong reads so far, for `stop_early`.
    let wrong = Arc::new(AtomicUsize::new(0));

    let reader = {
        let (target, versions) = (target.clone(), Arc::clone(&versions));
        let (created, done, wrong) = (Arc::clone(&created), Arc::clone(&done), Arc::clone(&wrong));
        std::thread::spawn(move || {
            let mut found = Report::default();
            while !done.load(Ordering::Acquire) {
                // Read before asking whether the file exists yet, so a read
                // that found nothing is only excused if it came first.
                let result = check(&target, &versions);
                let was_created = created.load(Ordering::Acquire);
                match result {
                    Ok(which) => found.seen[which] += 1,
                    Err(problem) if was_created => {
                        found.add(problem);
                        wrong.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {}
                }
                found.concurrent_reads += 1;
            }
            found
        })
    };

    let mut rng = Rng::seeded();
    let mut report = Report::default();
    for round in 0..kills {
        let mut writer = Writer::start(&target, plain, round % 2);
        writer.wait_for_writes(1 + rng.below(3) as usize);
        created.store(true, Ordering::Release);
        // A random pause, so that the kill lands anywhere in the next
        // write: creating the temporary file, filling it, syncing it,
        // renaming it.
        std::thread::sleep(Duration::from_micros(rng.below(4_000)));
        if writer.kill() {
            report.kills_mid_run += 1;
        }
        if let Err(problem) = check(&target, &versions) {
            report.add(format!("after kill {round}: {problem}"));
        }
        // Whatever a kill leaves behind is a dot file, which loaders skip.
        for entry in fs::read_dir(dir.path()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().to_string();
            assert!(
                name == "state.json" || name.starts_with(".state.json.tmp-"),
                "unexpected file {name}"
            );
        }
        if stop_early && report.violation_count + wrong.load(Ordering::Relaxed) > 0 {
            break;
        }
    }
    done.store(true, Ordering::Release);
    let found = reader.join().unwrap();
    report.violation_count += found.violation_count;
    report.violations.extend(found.violations);
    report.concurrent_reads = found.concurrent_reads;
    report.seen = found.seen;
    report
}

#[test]
fn a_writer_killed_at_random_never_leaves_a_torn_empty_or_missing_file() {
    let report = hammer(false, KILLS, false);

    assert_eq!(report.violation_count, 0, "{report:#?}");
    // The harness really did what it claims: the kills interrupted running
    // writers, and the reader read while they wrote, seeing both versions.
    assert!(report.kills_mid_run >= KILLS * 9 / 10, "{report:#?}");
    assert!(report.seen[0] > 0 && report.seen[1] > 0, "{report:#?}");
}

#[test]
fn the_same_harness_catches_a_plain_write_torn_or_empty() {
    // `std::fs::write` truncates the file and then fills it: a reader in
    // between, or a kill, finds it empty or cut short. If the harness could
    // not see that, its passing above would prove nothing.
    let report = hammer(true, KILLS, true);

    assert!(report.violation_count > 0, "{report:#?}");
}
