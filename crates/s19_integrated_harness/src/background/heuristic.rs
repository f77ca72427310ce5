//! Which commands go to the background when the model does not say.
//!
//! The model decides first: `run_in_background: true` or `false` on the
//! `bash` call is obeyed as given. Only when the field is absent does this
//! guess apply, and it guesses from words that usually mean minutes of
//! waiting: installs, builds, test runs, deployments.
//!
//! The course matched those words anywhere in the command, so `cat
//! latest.txt` counted as a test run ("latest" contains "test"). Here the
//! command is split into simple commands and words, and words must match
//! whole. The generic words (`install`, `build`, `test` …) count only after
//! a package manager or build tool (`npm install`, `cargo build`, `pip
//! install`), so `grep -r install docs` or the shell's instant `test -f x`
//! stay in the foreground; a few programs (`make`, `pytest` …) are slow on
//! their own. The program is the first word, looking through `sudo`,
//! `time`, `env` and `python -m`.

/// Programs whose `install`, `build`, `test` … subcommands take a while.
const TOOLCHAINS: &[&str] = &[
    "npm", "yarn", "pnpm", "npx", "pip", "pip3", "uv", "poetry", "cargo", "go", "docker", "podman",
    "mvn", "gradle", "dotnet", "bundle", "gem", "composer", "mix", "swift", "apt", "apt-get",
    "brew", "dnf", "yum", "conda", "bazel", "cmake", "deno", "bun",
];

/// Words that name a slow step when they follow a toolchain
/// (`npm install`, `cargo build`, `npm run test`).
const SLOW_SUBCOMMANDS: &[&str] = &["install", "build", "test", "deploy", "compile"];

/// Commands that are slow on their own.
const SLOW_COMMANDS: &[&str] = &["make", "pytest", "tox", "gradle", "mvn"];

// ANCHOR: decide
/// Whether a `bash` call runs in the background: the model's explicit
/// choice if it made one, else [`looks_slow`].
pub fn runs_in_background(explicit: Option<bool>, command: &str) -> bool {
    explicit.unwrap_or_else(|| looks_slow(command))
}

/// Whether `command` looks like it will take minutes.
pub fn looks_slow(command: &str) -> bool {
    // ANCHOR: exercise-s13-slow
    simple_commands(command).any(|words| {
        let Some((program, rest)) = program_and_arguments(&words) else {
            return false;
        };
        SLOW_COMMANDS.contains(&program)
            || (TOOLCHAINS.contains(&program)
                && rest.iter().any(|word| SLOW_SUBCOMMANDS.contains(word)))
    })
    // ANCHOR_END: exercise-s13-slow
}
// ANCHOR_END: decide

/// The words of each simple command in a command line: split at `;`, `&`,
/// `|`, newlines and parentheses, then at whitespace, skipping leading
/// variable assignments (`CI=1 npm test`). A rough split — quotes are not
/// interpreted — which is all a guess needs.
fn simple_commands(line: &str) -> impl Iterator<Item = Vec<&str>> {
    line.split([';', '&', '|', '\n', '(', ')']).map(|part| {
        part.split_whitespace()
            .skip_while(|word| word.contains('=') && !word.starts_with('='))
            .collect()
    })
}

/// Words that run the word after them as the program.
const PREFIXES: &[&str] = &["sudo", "time", "env", "nice", "nohup", "exec"];

/// The program a simple command runs, and its arguments.
fn program_and_arguments<'a>(words: &'a [&'a str]) -> Option<(&'a str, &'a [&'a str])> {
    let start = words.iter().position(|word| !PREFIXES.contains(word))?;
    let (program, rest) = (words[start], &words[start + 1..]);
    match (program, rest) {
        ("python" | "python3", ["-m", module, rest @ ..]) => Some((module, rest)),
        _ => Some((program, rest)),
    }
}
