//! Reading the commands of a chapter's shell blocks, far enough to find
//! `cargo run -p CRATE -- FLAGS` and `cargo xtask diff A B`: words split as
//! a shell splits them (quotes, backslashes, line continuations, comments),
//! commands split at `;`, `&&`, `||`, `|`, `&` and newlines. In `console`
//! style blocks only lines starting with `$ ` are commands.

/// Splits a block into simple commands, each a list of words.
pub fn commands(code: &str) -> Vec<Vec<String>> {
    let console = code.lines().any(|line| line.trim_start().starts_with("$ "));
    let mut script = String::new();
    let mut continued = false;
    for line in code.lines() {
        let line = if console && !continued {
            match line.trim_start().strip_prefix("$ ") {
                Some(command) => command,
                // Output shown after a command.
                None => continue,
            }
        } else {
            line
        };
        continued = line.trim_end().ends_with('\\');
        script.push_str(line);
        script.push('\n');
    }
    split(&script)
}

fn split(script: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = script.chars().peekable();
    let end_word = |word: &mut Option<String>, words: &mut Vec<String>| {
        if let Some(w) = word.take() {
            words.push(w);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(escaped) => word.get_or_insert_with(String::new).push(escaped),
            },
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for inner in chars.by_ref() {
                    if inner == '\'' {
                        break;
                    }
                    w.push(inner);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(inner) = chars.next() {
                    match inner {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            w.extend(chars.next());
                        }
                        other => w.push(other),
                    }
                }
            }
            '#' if word.is_none() => {
                for inner in chars.by_ref() {
                    if inner == '\n' {
                        break;
                    }
                }
                end_word(&mut word, &mut words);
                commands.push(std::mem::take(&mut words));
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                end_word(&mut word, &mut words);
                commands.push(std::mem::take(&mut words));
            }
            c if c.is_whitespace() => end_word(&mut word, &mut words),
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    end_word(&mut word, &mut words);
    commands.push(words);
    commands.retain(|command| !command.is_empty());
    commands
}

/// A `cargo run` with a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoRun {
    pub package: String,
    /// The words after `--`, for the program.
    pub args: Vec<String>,
}

/// What a command asks cargo to do, as far as the checks care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cargo {
    Run(CargoRun),
    /// `cargo xtask diff A [B]`: the lessons named.
    XtaskDiff(Vec<String>),
}

/// Reads one simple command; `None` unless it is one of [`Cargo`]'s kinds.
pub fn cargo(words: &[String]) -> Option<Cargo> {
    // Skip `VAR=value` prefixes and `env`.
    let is_prefix = |w: &String| w == "env" || (w.contains('=') && !w.starts_with('-'));
    let start = words.iter().position(|w| !is_prefix(w))?;
    let words = &words[start..];
    if words.first()? != "cargo" {
        return None;
    }
    match words.get(1)?.as_str() {
        "run" => {
            let mut package = None;
            let mut iter = words[2..].iter();
            let mut args = Vec::new();
            while let Some(word) = iter.next() {
                match word.as_str() {
                    "--" => {
                        args = iter.cloned().collect();
                        break;
                    }
                    "-p" | "--package" => package = iter.next().cloned(),
                    other => {
                        if let Some(name) = other
                            .strip_prefix("--package=")
                            .or_else(|| other.strip_prefix("-p").filter(|n| !n.is_empty()))
                        {
                            package = Some(name.to_string());
                        }
                    }
                }
            }
            Some(Cargo::Run(CargoRun {
                package: package?,
                args,
            }))
        }
        "xtask" if words.get(2).map(String::as_str) == Some("diff") => Some(Cargo::XtaskDiff(
            words[3..]
                .iter()
                .filter(|w| !w.starts_with('-'))
                .cloned()
                .collect(),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn commands_split_like_a_shell() {
        let code = "# set up\nmkdir -p /tmp/play && cd /tmp/play  # go\n\
                    MODEL_ID=qwen3 cargo run -p s02_tool_use -- \\\n  --workdir /tmp/play -p \"say \\\"hi\\\"; then -x\" | tee log\n";
        assert_eq!(
            commands(code),
            [
                words(&["mkdir", "-p", "/tmp/play"]),
                words(&["cd", "/tmp/play"]),
                words(&[
                    "MODEL_ID=qwen3",
                    "cargo",
                    "run",
                    "-p",
                    "s02_tool_use",
                    "--",
                    "--workdir",
                    "/tmp/play",
                    "-p",
                    "say \"hi\"; then -x"
                ]),
                words(&["tee", "log"]),
            ]
        );
    }

    #[test]
    fn console_blocks_keep_only_prompted_lines() {
        let code = "$ cargo run -p s01_agent_loop -- --demo\ns01 >> hello\n$ ls 'a b'\n";
        assert_eq!(
            commands(code),
            [
                words(&["cargo", "run", "-p", "s01_agent_loop", "--", "--demo"]),
                words(&["ls", "a b"])
            ]
        );
    }

    #[test]
    fn cargo_runs_and_xtask_diffs_are_recognised() {
        let run = cargo(&words(&[
            "A=1",
            "cargo",
            "run",
            "-q",
            "--package=s02",
            "--",
            "-v",
            "--demo",
        ]));
        assert_eq!(
            run,
            Some(Cargo::Run(CargoRun {
                package: "s02".into(),
                args: words(&["-v", "--demo"])
            }))
        );
        assert_eq!(
            cargo(&words(&["cargo", "run", "-ps01"])),
            Some(Cargo::Run(CargoRun {
                package: "s01".into(),
                args: vec![]
            }))
        );
        assert_eq!(cargo(&words(&["cargo", "run"])), None);
        assert_eq!(
            cargo(&words(&["cargo", "xtask", "diff", "--stat", "s01", "s02"])),
            Some(Cargo::XtaskDiff(words(&["s01", "s02"])))
        );
        assert_eq!(cargo(&words(&["cargo", "test"])), None);
    }
}
