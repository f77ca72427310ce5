//! Evaluators: the judges of a goal, kept apart from the agent that works
//! on it.
//!
//! An evaluator is handed two things only: the goal's objective and the
//! trusted evidence delivered since the goal was set. It never sees the
//! conversation, so nothing the user types and nothing the model writes
//! can sway it. Two are provided:
//!
//! * [`KeywordEvaluator`]: deterministic and offline, for the demo and the
//!   tests — every clause of the objective must appear in the output of
//!   work that succeeded (a command that exited 0, a run that completed);
//! * [`super::model_evaluator::ModelEvaluator`]: a side query to the model,
//!   for objectives a substring cannot judge.

use shared::model::BoxFuture;

use super::evidence::Evidence;

// ANCHOR: evaluator
/// An evaluator's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the goal is met.
    pub ok: bool,
    /// Why, in a sentence, for `/goal` and for the next continuation.
    pub reason: String,
}

impl Verdict {
    /// The goal is not met, because of `reason`.
    pub fn not_met(reason: impl Into<String>) -> Self {
        Self {
            ok: false,
            reason: reason.into(),
        }
    }
}

/// Decides whether trusted evidence meets an objective.
pub trait Evaluator: Send + Sync {
    /// A short name for `/goal`.
    fn name(&self) -> &'static str;

    /// Judges `objective` on `evidence` (oldest first; empty when nothing
    /// was delivered since the goal was set). Never fails: a judge that
    /// cannot decide says "not met" and why.
    fn evaluate<'a>(
        &'a self,
        objective: &'a str,
        evidence: &'a [Evidence],
    ) -> BoxFuture<'a, Verdict>;
}
// ANCHOR_END: evaluator

/// What an empty window is told.
pub const NO_EVIDENCE: &str = "no trusted evidence has been delivered since the goal was set";

/// Words that frame a condition without being part of it: "until the tests
/// pass" asks for "the tests pass".
const FILLER: &[&str] = &[
    "until", "till", "when", "once", "after", "that", "make", "sure", "wait", "for",
];

// ANCHOR: clauses
/// The clauses of `objective` that must all be found: split on "and",
/// commas and semicolons, in [`words`] form, with leading filler words
/// dropped. An objective that is all filler is one clause, as written.
pub fn clauses(objective: &str) -> Vec<String> {
    let separated = objective.replace([',', ';'], " and ");
    let mut found = Vec::new();
    for part in separated.split(" and ") {
        let kept: Vec<String> = words(part)
            .split(' ')
            .filter(|word| !word.is_empty())
            .skip_while(|word| FILLER.contains(word))
            .map(str::to_string)
            .collect();
        if !kept.is_empty() {
            found.push(kept.join(" "));
        }
    }
    if found.is_empty() {
        found.push(words(objective));
    }
    found.retain(|clause| !clause.is_empty());
    found
}
// ANCHOR_END: clauses

/// Text as the matcher compares it: lower case, punctuation around each
/// word dropped, one space between words. Objective and evidence go
/// through the same function, so "lint: clean." finds "Lint: clean".
pub fn words(text: &str) -> String {
    text.to_lowercase()
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `clause` occurs in `text` as whole words ("tests passed" is not
/// found in "subtests passed").
fn contains_words(text: &str, clause: &str) -> bool {
    format!(" {text} ").contains(&format!(" {clause} "))
}

// ANCHOR: keyword
/// The offline judge: the goal is met when every clause of the objective
/// occurs, case-insensitively, in the output of trusted work that
/// *succeeded*. The output of a command that failed never counts, however
/// it is worded: `echo tests passed; exit 1` is a failure that says
/// "tests passed". The command line is never read (the model wrote it).
/// Within what succeeded the matcher is literal — "0 tests passed, 3
/// failed" from a command that exits 0 contains "tests passed", and so
/// does `echo tests passed` — which is why a configured model is asked
/// instead when there is one, and why `--check` exists.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeywordEvaluator;

impl KeywordEvaluator {
    /// The verdict, computed at once.
    pub fn judge(objective: &str, evidence: &[Evidence]) -> Verdict {
        if evidence.is_empty() {
            return Verdict::not_met(NO_EVIDENCE);
        }
        let clauses = clauses(objective);
        let (succeeded, failed): (Vec<&Evidence>, Vec<&Evidence>) =
            evidence.iter().partition(|entry| entry.outcome.succeeded);
        let texts: Vec<String> = succeeded.iter().map(|entry| words(&entry.output)).collect();
        let (found, missing): (Vec<String>, Vec<String>) = clauses
            .iter()
            .cloned()
            .partition(|clause| texts.iter().any(|text| contains_words(text, clause)));
        if missing.is_empty() {
            let origins: Vec<String> = succeeded
                .iter()
                .zip(&texts)
                .filter(|(_, text)| found.iter().any(|clause| contains_words(text, clause)))
                .map(|(entry, _)| entry.origin.to_string())
                .collect();
            return Verdict {
                ok: true,
                reason: format!(
                    "{} found in the output of trusted work that succeeded, from {}",
                    quoted(&found),
                    origins.join(", ")
                ),
            };
        }
        // Say so when the words are there but only in failures: the model
        // learns that its command failed, not that it printed too little.
        let only_failed: Vec<String> = failed
            .iter()
            .filter(|entry| {
                let text = words(&entry.output);
                missing.iter().any(|clause| contains_words(&text, clause))
            })
            .map(|entry| format!("{} ({})", entry.origin, entry.outcome.status))
            .collect();
        if only_failed.is_empty() {
            Verdict::not_met(format!(
                "no trusted evidence of work that succeeded mentions {}",
                quoted(&missing)
            ))
        } else {
            Verdict::not_met(format!(
                "{} appears only in the output of work that did not succeed: {}",
                quoted(&missing),
                only_failed.join(", ")
            ))
        }
    }
}

impl Evaluator for KeywordEvaluator {
    fn name(&self) -> &'static str {
        "keyword"
    }

    fn evaluate<'a>(
        &'a self,
        objective: &'a str,
        evidence: &'a [Evidence],
    ) -> BoxFuture<'a, Verdict> {
        Box::pin(std::future::ready(Self::judge(objective, evidence)))
    }
}
// ANCHOR_END: keyword

/// `"a"`, `"a" and "b"`, `"a", "b" and "c"`.
fn quoted(clauses: &[String]) -> String {
    let quoted: Vec<String> = clauses.iter().map(|clause| format!("{clause:?}")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::evidence::{Origin, Outcome};

    fn entry(output: &str, succeeded: bool) -> Evidence {
        Evidence {
            seq: 0,
            origin: Origin::BackgroundTask {
                id: "bg_0001".into(),
            },
            command: "echo tests passed and deploy green".into(),
            outcome: Outcome {
                succeeded,
                status: if succeeded { "completed" } else { "failed" },
            },
            output: output.into(),
        }
    }

    fn evidence(output: &str) -> Vec<Evidence> {
        vec![entry(output, true)]
    }

    #[test]
    fn an_objective_splits_into_clauses_without_its_filler() {
        assert_eq!(
            clauses("until tests passed and deploy green"),
            ["tests passed", "deploy green"]
        );
        assert_eq!(
            clauses("Make sure the build succeeds, lint: clean."),
            ["the build succeeds", "lint clean"]
        );
        assert_eq!(clauses("until"), ["until"]);
    }

    #[test]
    fn clauses_match_whole_words_whatever_the_punctuation() {
        assert!(KeywordEvaluator::judge("lint: clean.", &evidence("Lint: CLEAN")).ok);
        assert!(!KeywordEvaluator::judge("tests passed", &evidence("subtests passed")).ok);
    }

    #[test]
    fn every_clause_must_be_found() {
        let half =
            KeywordEvaluator::judge("tests passed and deploy green", &evidence("Tests PASSED"));
        assert!(!half.ok);
        assert_eq!(
            half.reason,
            "no trusted evidence of work that succeeded mentions \"deploy green\""
        );
        let all = KeywordEvaluator::judge(
            "tests passed and deploy green",
            &evidence("tests   passed\ndeploy green"),
        );
        assert!(all.ok, "{all:?}");
        assert!(all.reason.contains("background task bg_0001"), "{all:?}");
    }

    #[test]
    fn no_evidence_is_not_met() {
        let verdict = KeywordEvaluator::judge("tests passed", &[]);
        assert_eq!(verdict, Verdict::not_met(NO_EVIDENCE));
    }

    #[test]
    fn the_output_of_work_that_failed_never_counts_nor_does_the_command() {
        let failed = KeywordEvaluator::judge("tests passed", &[entry("tests passed", false)]);
        assert!(!failed.ok);
        assert_eq!(
            failed.reason,
            "\"tests passed\" appears only in the output of work that did not succeed: \
             background task bg_0001 (failed)"
        );
        // The command says the words; the output does not.
        let quiet = KeywordEvaluator::judge("deploy green", &evidence("ok"));
        assert!(!quiet.ok, "{quiet:?}");
    }
}
