//! `cargo xtask`: see the library's documentation for what each task does.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use xtask::{carry, check, diff, docs, exercise, fork, i18n, lessons, repo_root};

#[derive(Parser)]
#[command(about = "Tasks of the Rust agent course: lesson diffs, the book, its checks.")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Diff two lesson crates (`diff s02` = the lesson before s02 against s02).
    Diff {
        /// The older lesson (s01, 1, s01_agent_loop), or the only one given.
        from: String,
        /// The newer lesson.
        to: Option<String>,
        /// Show a per-file summary instead of the diff.
        #[arg(long)]
        stat: bool,
    },
    /// Regenerate the book's generated pages and build every edition: English
    /// into target/book, translations into target/book/zh and target/book/ja.
    Docs {
        /// Serve one edition on localhost with live reload instead of building.
        #[arg(long)]
        serve: bool,
        /// The edition to build or serve alone: en, zh or ja.
        #[arg(long)]
        lang: Option<String>,
    },
    /// Apply a fix made in one lesson to every later lesson: the lesson's
    /// uncommitted changes (src/, tests/, demo.json, Cargo.toml), merged
    /// three-way into each later lesson in turn, stopping at the first
    /// conflict. Then the generated pages are written again.
    Carry {
        /// The lesson the fix was made in (s12, 12, s12_task_system); after
        /// a conflict, the lesson where the carry stopped.
        lesson: String,
        /// List what would change; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Carry the difference between this revision and the working tree
        /// (e.g. a fix already committed: `--from HEAD~1`).
        #[arg(long, value_name = "REV")]
        from: Option<String>,
    },
    /// Check that the book and the lessons agree, translations included (no
    /// mdBook needed).
    Check,
    /// The translations: their state, and recording a reviewed one.
    Translation {
        #[command(subcommand)]
        task: TranslationTask,
    },
    /// Copy one lesson, with `shared` and what it reads at run time, into a
    /// standalone Cargo project that refers to nothing in this repository.
    Fork {
        /// The lesson (s08, 8, s08_context_compact).
        lesson: String,
        /// A new or empty directory outside this repository.
        dest: PathBuf,
        /// The crate's name in the fork (default: the lesson's).
        #[arg(long)]
        name: Option<String>,
        /// Use the registry cache alone: fail rather than download a
        /// dependency it lacks.
        #[arg(long)]
        offline: bool,
        /// An exercise: the lesson's mechanism (the regions its
        /// exercise.toml lists) replaced by `todo!()`, with `cargo grade`,
        /// `cargo hint`, `cargo solution` and `cargo reset` in the fork.
        #[arg(long)]
        exercise: bool,
    },
    /// Prove each exercise works: fork it with --exercise, build it offline,
    /// see `cargo grade` fail, each region reached by a graded test, and
    /// `grade` pass once `cargo solution --apply` put the solution back.
    ExerciseCheck {
        /// The lessons (s01 s21); none with --all.
        lessons: Vec<String>,
        /// Every lesson with an exercise.toml.
        #[arg(long)]
        all: bool,
    },
    /// Fork a lesson under a new name and prove the fork works: `cargo test
    /// --offline --locked` in it (building into this workspace's target
    /// directory, so the dependencies built here are reused), its demo run,
    /// its lock unchanged. CI runs it after `cargo test`.
    ForkCheck {
        /// The lesson (default: the newest).
        lesson: Option<String>,
        /// The crate's name in the fork.
        #[arg(long, default_value = "my_agent")]
        name: String,
    },
}

#[derive(Subcommand)]
enum TranslationTask {
    /// Each translated page against its English source: current, stale, missing.
    Status,
    /// Record that a translation now matches its English page (after
    /// reviewing it against the change `git log -p docs/src/PAGE.md` shows).
    Stamp {
        /// The edition: zh or ja.
        lang: String,
        /// The page: a lesson (s05, s05_todo_write) or introduction, benchmarks.
        page: String,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let root = repo_root();
    match cli.task {
        Task::Diff { from, to, stat } => {
            let all = lessons::discover(&root)?;
            let (old, new) = match to {
                Some(to) => (lessons::find(&all, &from)?, lessons::find(&all, &to)?),
                None => {
                    let new = lessons::find(&all, &from)?;
                    let Some(old) = lessons::previous(&all, new) else {
                        bail!("{new} is the first lesson: name two lessons to compare");
                    };
                    (old, new)
                }
            };
            let changes = diff::compare(old, new)?;
            let text = if stat {
                diff::stat(&changes)
            } else {
                diff::unified(&changes)
            };
            let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let text = if colour { diff::colour(&text) } else { text };
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = stdout.write_all(text.as_bytes());
            Ok(ExitCode::SUCCESS)
        }
        Task::Docs { serve, lang } => {
            for path in docs::generate(&root)? {
                eprintln!("wrote {path}");
            }
            docs::build(&root, serve, lang.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Translation {
            task: TranslationTask::Status,
        } => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(i18n::status(&root)?.as_bytes());
            Ok(ExitCode::SUCCESS)
        }
        Task::Translation {
            task: TranslationTask::Stamp { lang, page },
        } => {
            let edition = i18n::translation(&lang)?;
            let page = i18n::resolve_page(&root, &page)?;
            let line = i18n::stamp(&root, edition, &page)?;
            eprintln!("{}/{page}: {line}", edition.src());
            eprintln!("Run `cargo xtask docs` if the page's title or motto changed.");
            Ok(ExitCode::SUCCESS)
        }
        Task::Carry {
            lesson,
            dry_run,
            from,
        } => {
            let options = carry::Options { dry_run, from };
            let report = carry::carry(&root, &lesson, &options)?;
            eprint!("{}", report.render(dry_run));
            Ok(if report.conflicted() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Task::Check => {
            let problems = check::run(&root)?;
            if problems.is_empty() {
                eprintln!("book and lessons agree");
                return Ok(ExitCode::SUCCESS);
            }
            for problem in &problems {
                eprintln!("{problem}");
            }
            eprintln!("{} problem(s)", problems.len());
            Ok(ExitCode::FAILURE)
        }
        Task::Fork {
            lesson,
            dest,
            name,
            offline,
            exercise,
        } => {
            let all = lessons::discover(&root)?;
            let lesson = lessons::find(&all, &lesson)?;
            if offline {
                eprintln!(
                    "settling the fork's Cargo.lock from the registry cache alone (--offline)"
                );
            } else {
                eprintln!(
                    "settling the fork's Cargo.lock with `cargo metadata`: Cargo downloads the \
                     manifests of dependencies the registry cache lacks (--offline forbids it)"
                );
            }
            let forked = fork::fork_with(&root, lesson, &dest, name.as_deref(), offline, exercise)?;
            eprintln!(
                "forked {lesson} into {} as {}",
                forked.dir.display(),
                forked.name
            );
            if exercise {
                eprintln!(
                    "left for you: {} (look for `TODO({}`)",
                    forked.exercise.join(", "),
                    lesson.id()
                );
                eprintln!("  cd {} && cargo grade", forked.dir.display());
            } else {
                eprintln!("  cd {} && cargo run", forked.dir.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Task::ExerciseCheck {
            lessons: wanted,
            all,
        } => {
            let every = lessons::discover(&root)?;
            let chosen: Vec<&lessons::Lesson> = if all {
                every
                    .iter()
                    .filter(|l| l.dir.join(lessons::EXERCISE_TOML).is_file())
                    .collect()
            } else if wanted.is_empty() {
                bail!("name the lessons to check (s01 s21), or --all");
            } else {
                wanted
                    .iter()
                    .map(|w| lessons::find(&every, w))
                    .collect::<Result<_>>()?
            };
            let target_dir = exercise::check::target_dir(&root)?;
            let started = std::time::Instant::now();
            for lesson in chosen {
                eprintln!("exercise-check {}: forking with --exercise…", lesson.id());
                let checked = exercise::check::check(&root, lesson, &target_dir)?;
                eprintln!(
                    "exercise-check {}: regions {} each reached; stubbed: {}; solved: {} ({:.0?})",
                    checked.lesson,
                    checked.regions.join(", "),
                    checked.stubbed,
                    checked.solved,
                    checked.took
                );
            }
            eprintln!("every exercise checked in {:.0?}", started.elapsed());
            Ok(ExitCode::SUCCESS)
        }
        Task::ForkCheck { lesson, name } => {
            let all = lessons::discover(&root)?;
            let lesson = match &lesson {
                Some(lesson) => lessons::find(&all, lesson)?,
                None => all.last().context("the course has no lessons")?,
            };
            // The workspace's target directory, wherever the user keeps it.
            // The fork's cargo runs elsewhere, so a relative path is made whole.
            let target_dir = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| root.join("target"), PathBuf::from);
            let target_dir = std::path::absolute(target_dir)?;
            eprintln!("forking {lesson} as {name} and testing it offline…");
            let checked = fork::check::check(&root, lesson, &name, &target_dir)?;
            eprintln!(
                "the fork of {lesson} as {name} built, passed its tests and played its demo \
                 ({}); built in {}",
                checked.demo_reply.join(" · "),
                checked.dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
