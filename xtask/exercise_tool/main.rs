//! The exercise's commands, run through the Cargo aliases in
//! `.cargo/config.toml`:
//!
//! - `cargo grade`: runs the lesson's tests and reports the graded ones
//!   (this lesson's) apart from the rest (earlier lessons');
//! - `cargo hint [REGION]`: the next hint, one more each time;
//! - `cargo solution [--peek | --apply] [REGION]`: the course's solution,
//!   as a diff against your code (once `grade` is green), or put in place;
//! - `cargo reset [REGION] [--yes]`: puts the stub back.
//!
//! What it knows of the exercise is in `exercise/exercise.txt`; the
//! solutions and stubs are in `exercise/solutions/` and `exercise/stubs/`;
//! what it remembers (hints shown, grade green) in `exercise/state.txt`.
//! It uses the standard library only, so it builds offline with nothing
//! added to the lock.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// An error the student reads: one sentence, with what to do.
type Failure = String;

fn run(args: &[String]) -> Result<ExitCode, Failure> {
    let root = fork_root()?;
    let data = Data::load(&root)?;
    let (command, rest) = args
        .split_first()
        .ok_or("no command (grade, hint, solution, reset)")?;
    let flags: Vec<&str> = rest
        .iter()
        .map(String::as_str)
        .filter(|a| a.starts_with("--"))
        .collect();
    let names: Vec<&str> = rest
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let regions = data.select(names.first().copied())?;
    match command.as_str() {
        "grade" => grade(&root, &data),
        "hint" => hint(&root, &data, names.first().copied()),
        "solution" => solution(&root, &data, &regions, &flags),
        "reset" => reset(&root, &data, &regions, flags.contains(&"--yes")),
        other => Err(format!(
            "unknown command {other:?}: grade, hint, solution or reset"
        )),
    }
}

/// The fork's root: the folder above this tool's.
fn fork_root() -> Result<PathBuf, Failure> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .ok_or("run me through cargo: `cargo grade`, `cargo hint`, …")?;
    manifest
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "the tool's folder has no parent".to_string())
}

#[derive(Debug, Default)]
struct Data {
    lesson: String,
    package: String,
    graded: Vec<String>,
    hashes: Vec<(String, String)>,
    regions: Vec<Region>,
}

#[derive(Debug, Default, Clone)]
struct Region {
    name: String,
    anchor: String,
    file: String,
    todo: String,
    hints: Vec<String>,
}

impl Data {
    fn load(root: &Path) -> Result<Data, Failure> {
        let text = read(&root.join("exercise/exercise.txt"))?;
        let mut data = Data::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["lesson", lesson] => data.lesson = lesson.to_string(),
                ["package", package] => data.package = package.to_string(),
                ["graded", module] => data.graded.push(module.to_string()),
                ["hash", file, hash] => data.hashes.push((file.to_string(), hash.to_string())),
                ["region", name, anchor, file] => data.regions.push(Region {
                    name: name.to_string(),
                    anchor: anchor.to_string(),
                    file: file.to_string(),
                    ..Region::default()
                }),
                ["todo", todo] => {
                    if let Some(region) = data.regions.last_mut() {
                        region.todo = todo.to_string();
                    }
                }
                ["hint", hint] => {
                    if let Some(region) = data.regions.last_mut() {
                        region.hints.push(hint.to_string());
                    }
                }
                _ => return Err(format!("exercise/exercise.txt: cannot read {line:?}")),
            }
        }
        Ok(data)
    }

    /// The region named, or all of them.
    fn select(&self, name: Option<&str>) -> Result<Vec<Region>, Failure> {
        match name {
            None => Ok(self.regions.clone()),
            Some(name) => {
                let wanted = name
                    .strip_prefix(&format!("{} ", self.lesson))
                    .unwrap_or(name);
                match self.regions.iter().find(|r| r.name == wanted) {
                    Some(region) => Ok(vec![region.clone()]),
                    None => Err(format!(
                        "no region {name:?}: the regions are {}",
                        self.regions
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
        }
    }
}

// --- grade ---------------------------------------------------------------

/// One test's outcome.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Passed,
    Failed,
    Ignored,
}

fn grade(root: &Path, data: &Data) -> Result<ExitCode, Failure> {
    let edited: Vec<&str> = data
        .hashes
        .iter()
        .filter(|(file, hash)| {
            std::fs::read(root.join(file))
                .map(|bytes| format!("{:016x}", fnv1a(&bytes)))
                .ok()
                .as_ref()
                != Some(hash)
        })
        .map(|(file, _)| file.as_str())
        .collect();
    if !edited.is_empty() {
        eprintln!(
            "grade: tests were edited since the fork ({}); grade runs the tests as forked. Put them back (`git checkout -- {}` if you committed the fork) and grade again.",
            edited.join(", "),
            edited.join(" ")
        );
        return Ok(ExitCode::FAILURE);
    }
    let state = State::load(root);
    eprintln!(
        "grade {}: running the lesson's tests (cargo test -p {} --test it)…",
        data.lesson, data.package
    );
    let run = run_tests(root, &data.package)?;
    let (stdout, stderr, success) = (run.stdout, run.stderr, run.success);
    if !run.hung.is_empty() {
        eprintln!(
            "  HUNG {}: stopped after {} s with no test finishing; a stub (or your code) that panics or never returns can leave a test waiting forever",
            run.hung.join(", "),
            run.waited
        );
    }
    let mut outcomes = outcomes(&stdout);
    // A test stopped while still running failed.
    // (libtest names a slow test once it has run for a minute; it may still
    // have finished before the run was stopped.)
    for test in &run.hung {
        if !outcomes.iter().any(|(name, _)| name == test) {
            outcomes.push((test.clone(), Outcome::Failed));
        }
    }
    let mut not_run = 0;
    if run.stopped {
        // So did every test the stopped run never started: a count of only
        // the tests that finished would hide them.
        // Ignored tests (run only as child processes of others) are listed
        // too, but never run: they are neither passed nor failed.
        let ignored = list_tests(root, &data.package, true);
        for test in list_tests(root, &data.package, false) {
            if !ignored.contains(&test) && !outcomes.iter().any(|(name, _)| *name == test) {
                not_run += 1;
                outcomes.push((test, Outcome::Failed));
            }
        }
        if not_run > 0 {
            eprintln!(
                "  NOT RUN {} more tests: the run was stopped before they started; they count as failed",
                not_run
            );
        }
    }
    if outcomes.is_empty() {
        eprintln!("{stderr}");
        eprintln!(
            "grade {}: no test ran: the lesson did not build (see above)",
            data.lesson
        );
        return Ok(ExitCode::FAILURE);
    }
    let logs = failure_logs(&stdout);
    let stub_marker = format!("not yet implemented: {} ", data.lesson);
    let is_graded = |test: &str| {
        data.graded
            .iter()
            .any(|module| test.starts_with(&format!("{module}::")))
    };
    let mut graded = (0, 0);
    let mut earlier = (0, 0);
    let mut graded_failed = Vec::new();
    let mut through_stub = Vec::new();
    let mut earlier_failed = Vec::new();
    for (test, outcome) in &outcomes {
        if *outcome == Outcome::Ignored {
            continue;
        }
        let passed = *outcome == Outcome::Passed;
        let log = logs.get(test).map(String::as_str).unwrap_or_default();
        let stub = log.find(&stub_marker).map(|at| {
            log[at + "not yet implemented: ".len()..]
                .split(':')
                .next()
                .unwrap_or_default()
                .to_string()
        });
        if is_graded(test) {
            graded.1 += 1;
            if passed {
                graded.0 += 1;
            } else {
                graded_failed.push((test.clone(), stub));
            }
        } else {
            earlier.1 += 1;
            if passed {
                earlier.0 += 1;
            } else if let Some(stub) = stub {
                through_stub.push((test.clone(), stub));
            } else {
                earlier_failed.push(test.clone());
            }
        }
    }
    for (test, stub) in &graded_failed {
        match stub {
            Some(stub) => eprintln!("  FAILED {test} (reached the stub `{stub}`)"),
            None => eprintln!("  FAILED {test}"),
        }
    }
    for (test, stub) in &through_stub {
        eprintln!(
            "  failed {test}: an earlier lesson's test, reached through the stub `{stub}` (not broken: it passes once the stub is written)"
        );
    }
    // A test that runs the lesson's binary sees the `todo!` in the child's
    // output only, if at all: while a stub is left, say so, not "broken".
    let stubs_left: Vec<&str> = data
        .regions
        .iter()
        .filter(|r| is_stubbed(root, data, r))
        .map(|r| r.name.as_str())
        .collect();
    if !stubs_left.is_empty() && !earlier_failed.is_empty() {
        for test in &earlier_failed {
            eprintln!(
                "  failed {test}: an earlier lesson's test; regions {} are still stubs, which it may reach in a child process: write them first",
                stubs_left.join(", ")
            );
        }
        earlier_failed.clear();
    }
    for test in &earlier_failed {
        eprintln!(
            "  FAILED {test}: an earlier lesson's test, broken by a change outside the stubs"
        );
    }
    // The first failure's output in full: usually the `todo!` it reached.
    let first = graded_failed.first().map(|(test, _)| test);
    for test in first
        .into_iter()
        .chain(through_stub.first().map(|(test, _)| test))
    {
        if let Some(log) = logs.get(test) {
            // Up to the backtrace, if any: the panic message is what helps.
            let shown: Vec<&str> = log
                .lines()
                .take_while(|line| !line.starts_with("stack backtrace:"))
                .take(20)
                .collect();
            eprintln!("\n---- {test} ----\n{}", shown.join("\n").trim_end());
        }
    }
    println!(
        "grade {}: this lesson {}/{}, earlier {}/{}{}",
        data.lesson,
        graded.0,
        graded.1,
        earlier.0,
        earlier.1,
        if through_stub.is_empty() {
            String::new()
        } else {
            format!(" ({} reached through the stub)", through_stub.len())
        }
    );
    if graded.1 == 0 {
        eprintln!(
            "grade {}: zero graded tests ran (modules {}): nothing was graded",
            data.lesson,
            data.graded.join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    let green =
        graded_failed.is_empty() && through_stub.is_empty() && earlier_failed.is_empty() && success;
    let mut state = state;
    state.green = green;
    state.save(root)?;
    if green {
        println!("all green: `cargo solution` shows the course's solution beside yours");
        Ok(ExitCode::SUCCESS)
    } else {
        if !graded_failed.is_empty() {
            println!("not yet: `cargo hint` gives a hint");
        }
        Ok(ExitCode::FAILURE)
    }
}

/// What one `cargo test` printed, and the tests still running when it was
/// stopped.
struct TestRun {
    stdout: String,
    stderr: String,
    /// The run was stopped (a hang, or the overall timeout).
    stopped: bool,
    success: bool,
    hung: Vec<String>,
    waited: u64,
}

/// Runs the lesson's tests. A test left waiting forever (a stub panicked
/// in a task another side waits on) must not hang `grade`: libtest names
/// a test running for over 60 seconds; once one is named and no test has
/// finished for `EXERCISE_QUIET_SECS` (30) more, or after
/// `EXERCISE_TIMEOUT_SECS` (900) in all, the run is stopped.
fn run_tests(root: &Path, package: &str) -> Result<TestRun, Failure> {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    let secs = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (quiet, total) = (
        secs("EXERCISE_QUIET_SECS", 30),
        secs("EXERCISE_TIMEOUT_SECS", 900),
    );
    let mut command = cargo(root);
    command
        .args([
            "test",
            "--package",
            package,
            "--test",
            "it",
            "--no-fail-fast",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command
        .spawn()
        .map_err(|err| format!("running cargo test: {err}"))?;
    let out = Arc::new(Mutex::new((String::new(), Instant::now())));
    let reader = |mut pipe: Box<dyn Read + Send>, into: Arc<Mutex<(String, Instant)>>| {
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut guard) = into.lock() {
                    guard.0.push_str(&String::from_utf8_lossy(&buf[..n]));
                    guard.1 = Instant::now();
                }
            }
        })
    };
    let err = Arc::new(Mutex::new((String::new(), Instant::now())));
    let stdout_thread = child
        .stdout
        .take()
        .map(|pipe| reader(Box::new(pipe), out.clone()));
    let stderr_thread = child
        .stderr
        .take()
        .map(|pipe| reader(Box::new(pipe), err.clone()));
    let started = Instant::now();
    let mut hung = Vec::new();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        std::thread::sleep(Duration::from_millis(200));
        let Ok((text, last)) = out.lock().map(|g| (g.0.clone(), g.1)) else {
            continue;
        };
        let slow: Vec<String> = text
            .lines()
            .filter_map(|l| {
                l.strip_prefix("test ")?
                    .strip_suffix(" has been running for over 60 seconds")
            })
            .map(str::to_string)
            .collect();
        let stuck = !slow.is_empty() && last.elapsed() > Duration::from_secs(quiet);
        if stuck || started.elapsed() > Duration::from_secs(total) {
            hung = slow;
            stop(&mut child);
            break None;
        }
    };
    // A process the tests started in a group of its own (the bash tool's
    // children are) can outlive the kill and hold the pipes open: give the
    // readers a moment to reach the end, then take what they have read.
    let readers: Vec<_> = [stdout_thread, stderr_thread]
        .into_iter()
        .flatten()
        .collect();
    let drained = Instant::now();
    while readers.iter().any(|t| !t.is_finished()) && drained.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let take = |shared: &Arc<Mutex<(String, Instant)>>| {
        shared.lock().map(|g| g.0.clone()).unwrap_or_default()
    };
    Ok(TestRun {
        stdout: take(&out),
        stderr: take(&err),
        stopped: status.is_none(),
        success: status.is_some_and(|s| s.success()),
        hung,
        waited: started.elapsed().as_secs(),
    })
}

/// The names of the lesson's tests (`--list`; the binary is built by
/// then), or only its ignored ones.
fn list_tests(root: &Path, package: &str, only_ignored: bool) -> Vec<String> {
    let listed = cargo(root)
        .args(["test", "--package", package, "--test", "it", "--"])
        .args(["--list", "--format", "terse"])
        .args(only_ignored.then_some("--ignored"))
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(listed) = listed else {
        return Vec::new();
    };
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

/// Stops the test run: cargo and the test binary it started (its process
/// group, on Unix).
fn stop(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        // `--` is not optional: procps' `kill` reads `-12345` after a
        // signal as more options, and signals -1, every process the user
        // may signal. With `--` the negative number is the group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `test a::b ... ok` lines of libtest's output.
fn outcomes(stdout: &str) -> Vec<(String, Outcome)> {
    let mut out = Vec::new();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, result)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        let outcome = match result.trim() {
            "ok" => Outcome::Passed,
            "FAILED" => Outcome::Failed,
            r if r.starts_with("ignored") => Outcome::Ignored,
            _ => continue,
        };
        out.push((name.trim().to_string(), outcome));
    }
    out
}

/// What each failed test printed, from the `---- name stdout ----` blocks.
fn failure_logs(stdout: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in stdout.lines() {
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            if let Some((name, log)) = current.take() {
                out.insert(name, log);
            }
            current = Some((name.to_string(), String::new()));
        } else if line == "failures:" || line.starts_with("test result:") {
            if let Some((name, log)) = current.take() {
                out.insert(name, log);
            }
        } else if let Some((_, log)) = current.as_mut() {
            log.push_str(line);
            log.push('\n');
        }
    }
    if let Some((name, log)) = current {
        out.insert(name, log);
    }
    out
}

/// `cargo` in the fork, without the variables `cargo run` set for this
/// tool (build scripts watch some of them: passing them on would rebuild
/// what is built already).
fn cargo(root: &Path) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(root);
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        let from_cargo_run = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
            || ["CARGO_PRIMARY_PACKAGE", "OUT_DIR"].contains(&name.as_ref());
        if from_cargo_run {
            command.env_remove(&key);
        }
    }
    command
}

// --- hint ----------------------------------------------------------------

fn hint(root: &Path, data: &Data, name: Option<&str>) -> Result<ExitCode, Failure> {
    let mut state = State::load(root);
    let shown =
        |state: &State, region: &Region| state.hints.get(&region.name).copied().unwrap_or(0);
    let region = match name {
        Some(_) => data.select(name)?.remove(0),
        // The first region still stubbed with a hint left, else the first
        // with a hint left.
        None => {
            let left = |r: &&Region| shown(&state, r) < r.hints.len();
            let stubbed = |r: &&Region| is_stubbed(root, data, r);
            match data
                .regions
                .iter()
                .filter(left)
                .find(stubbed)
                .or_else(|| data.regions.iter().find(left))
            {
                Some(region) => region.clone(),
                None => {
                    println!("no hints left: `cargo solution --peek` shows the solution");
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
    };
    let n = shown(&state, &region);
    let Some(text) = region.hints.get(n) else {
        println!(
            "{} {}: no hints left ({} shown); `cargo solution --peek {}` shows the solution",
            data.lesson, region.name, n, region.name
        );
        return Ok(ExitCode::SUCCESS);
    };
    println!(
        "hint {}/{} for {} {} ({}):\n  {text}",
        n + 1,
        region.hints.len(),
        data.lesson,
        region.name,
        region.todo
    );
    state.hints.insert(region.name.clone(), n + 1);
    state.save(root)?;
    Ok(ExitCode::SUCCESS)
}

fn is_stubbed(root: &Path, data: &Data, region: &Region) -> bool {
    read(&root.join(&region.file))
        .ok()
        .and_then(|text| body(&text, &region.anchor))
        .is_some_and(|body| body.contains(&format!("todo!(\"{} {}:", data.lesson, region.name)))
}

// --- solution and reset ----------------------------------------------------

fn solution(
    root: &Path,
    data: &Data,
    regions: &[Region],
    flags: &[&str],
) -> Result<ExitCode, Failure> {
    if flags.contains(&"--apply") {
        for region in regions {
            let solution = read(&root.join(format!("exercise/solutions/{}.txt", region.name)))?;
            put(root, region, &solution)?;
            println!(
                "{} {}: the course's solution is in {}",
                data.lesson, region.name, region.file
            );
        }
        println!("`cargo grade` to see it pass; `cargo reset` puts the stub back");
        return Ok(ExitCode::SUCCESS);
    }
    let state = State::load(root);
    if !state.green {
        if !flags.contains(&"--peek") {
            eprintln!(
                "grade is not green yet: finish the exercise (`cargo grade`, `cargo hint`) first, or `cargo solution --peek` to see the solution now"
            );
            return Ok(ExitCode::FAILURE);
        }
        eprintln!("warning: peeking before `cargo grade` is green gives the exercise away\n");
    }
    for region in regions {
        let solution = read(&root.join(format!("exercise/solutions/{}.txt", region.name)))?;
        let text = read(&root.join(&region.file))?;
        let yours = body(&text, &region.anchor).ok_or_else(|| missing(region))?;
        println!(
            "--- yours: {} ({})\n+++ the course's: {} {}",
            region.file, region.anchor, data.lesson, region.name
        );
        print!("{}", diff(&yours, &solution));
        println!();
    }
    Ok(ExitCode::SUCCESS)
}

fn reset(root: &Path, data: &Data, regions: &[Region], yes: bool) -> Result<ExitCode, Failure> {
    let names: Vec<&str> = regions.iter().map(|r| r.name.as_str()).collect();
    if !yes {
        print!(
            "Put the stub back in {} {} (what you wrote there is lost)? [y/N] ",
            data.lesson,
            names.join(", ")
        );
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| e.to_string())?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing changed");
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Green was this code's; it is gone.
    let mut state = State::load(root);
    state.green = false;
    state.save(root)?;
    for region in regions {
        let stub = read(&root.join(format!("exercise/stubs/{}.txt", region.name)))?;
        put(root, region, &stub)?;
        println!(
            "{} {}: the stub is back in {}",
            data.lesson, region.name, region.file
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn missing(region: &Region) -> Failure {
    format!(
        "{} no longer has the markers of {a} (`// ANCHOR: {a}` … `// ANCHOR_END: {a}`): put them back around your code",
        region.file,
        a = region.anchor
    )
}

/// Replaces the body of `region` with `body`.
fn put(root: &Path, region: &Region, body_text: &str) -> Result<(), Failure> {
    let path = root.join(&region.file);
    let text = read(&path)?;
    let (start, end) = span(&text, &region.anchor).ok_or_else(|| missing(region))?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = lines[..=start].concat();
    out.push_str(body_text);
    out.push_str(&lines[end..].concat());
    std::fs::write(&path, out).map_err(|err| format!("writing {}: {err}", path.display()))
}

fn anchor_of<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let at = line.find(marker)?;
    let rest = line[at + marker.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn span(text: &str, anchor: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| anchor_of(l, "ANCHOR:") == Some(anchor))?;
    let end = lines
        .iter()
        .skip(start)
        .position(|l| anchor_of(l, "ANCHOR_END:") == Some(anchor))?;
    Some((start, start + end))
}

fn body(text: &str, anchor: &str) -> Option<String> {
    let (start, end) = span(text, anchor)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    Some(lines[start + 1..end].concat())
}

/// A line diff (longest common subsequence): ` ` kept, `-` yours, `+` the
/// course's.
fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!(" {}\n", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        }
    }
    out
}

// --- state and files -------------------------------------------------------

/// What the tool remembers between runs.
#[derive(Debug, Default)]
struct State {
    hints: BTreeMap<String, usize>,
    green: bool,
}

impl State {
    const FILE: &'static str = "exercise/state.txt";

    fn load(root: &Path) -> State {
        let mut state = State::default();
        for line in read(&root.join(Self::FILE)).unwrap_or_default().lines() {
            match line.split('\t').collect::<Vec<_>>().as_slice() {
                ["hints", region, n] => {
                    state
                        .hints
                        .insert(region.to_string(), n.parse().unwrap_or(0));
                }
                ["green"] => state.green = true,
                _ => {}
            }
        }
        state
    }

    fn save(&self, root: &Path) -> Result<(), Failure> {
        let mut text = String::new();
        for (region, n) in &self.hints {
            text.push_str(&format!("hints\t{region}\t{n}\n"));
        }
        if self.green {
            text.push_str("green\n");
        }
        std::fs::write(root.join(Self::FILE), text)
            .map_err(|err| format!("writing {}: {err}", Self::FILE))
    }
}

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|err| format!("reading {}: {err}", path.display()))
}

/// FNV-1a, 64 bits, as `cargo xtask fork --exercise` hashed the tests.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
