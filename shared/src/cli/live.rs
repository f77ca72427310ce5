//! The live progress area: one line per running piece of background work,
//! redrawn in place at the bottom of the terminal (with `indicatif`).
//!
//! The area only draws; [`super::render::TerminalPrinter`] decides when it
//! may. Its rule is the one `indicatif` itself lives by: the area knows how
//! many lines it drew and erases exactly those before drawing again, so
//! anything else written to the screen while lines are drawn must go
//! through [`LiveArea::suspend`] (erase, write, draw again below), or the
//! count is wrong and the screen garbled. What cannot be written in whole
//! lines (a reply streaming in) is written with the area emptied instead:
//! [`LiveArea::clear`] removes every line, and the printer adds them back
//! from the last reports when the reply is over.
//!
//! Each line shows the report's status and a clock of its own, so the
//! elapsed time moves between reports: the clock is the report's `elapsed`
//! plus the time since the report arrived, and a steady tick redraws it.
//!
//! Questions to the user ([`super::ask`]) must not be drawn over either,
//! but they are asked from deep inside a tool, far from the printer. So the
//! terminal's area is also registered in one process-wide slot, and
//! [`suspended`] runs a question with it erased.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::progress::Progress;
use crate::sync::LockExt;

/// How often the spinner and the clock move between reports.
const TICK: Duration = Duration::from_millis(200);

/// The terminal's live area, when there is one (see [`suspended`]).
static TERMINAL_AREA: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// Runs `f` with the terminal's live area erased, and draws it again after.
/// Without a live area, just runs `f`.
pub(crate) fn suspended<R>(f: impl FnOnce() -> R) -> R {
    let area = TERMINAL_AREA.locked().clone();
    match area {
        Some(area) => area.suspend(f),
        None => f(),
    }
}

/// One line of the area.
struct Line {
    id: String,
    bar: ProgressBar,
    /// Where the line's clock starts, in milliseconds.
    clock: Arc<AtomicU64>,
}

/// The lines drawn for running work, in the order their ids first reported.
pub(crate) struct LiveArea {
    multi: MultiProgress,
    lines: Vec<Line>,
    /// How often lines are redrawn on their own; `None` redraws them only
    /// when a report arrives (the tests' screens stay still).
    tick: Option<Duration>,
}

impl LiveArea {
    /// The area on standard error, registered for [`suspended`].
    pub(crate) fn terminal() -> Self {
        let area = Self::new(ProgressDrawTarget::stderr(), Some(TICK));
        *TERMINAL_AREA.locked() = Some(area.multi.clone());
        area
    }

    /// An area drawing on `target`.
    pub(crate) fn new(target: ProgressDrawTarget, tick: Option<Duration>) -> Self {
        Self {
            multi: MultiProgress::with_draw_target(target),
            lines: Vec::new(),
            tick,
        }
    }

    /// Whether no line is drawn.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Draws `report` on its id's line, adding the line if it has none.
    /// `since` is how long ago the report arrived (zero for a fresh one);
    /// the line's clock starts from the report's `elapsed` plus that.
    pub(crate) fn draw(&mut self, prefix: &str, report: &Progress, since: Duration) {
        let message = format!("{prefix}{}", report.text());
        let clock = report.elapsed + since;
        match self.lines.iter().find(|line| line.id == report.id) {
            Some(line) => {
                line.clock.store(millis(clock), Ordering::Relaxed);
                line.bar.reset_elapsed();
                line.bar.set_message(message);
            }
            None => {
                let base = Arc::new(AtomicU64::new(millis(clock)));
                // Hidden until it joins the area: a bar draws on standard
                // error of its own accord otherwise.
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
                bar.set_style(style(Arc::clone(&base)));
                bar.set_message(message);
                let bar = self.multi.add(bar);
                if let Some(tick) = self.tick {
                    bar.enable_steady_tick(tick);
                }
                bar.tick();
                self.lines.push(Line {
                    id: report.id.clone(),
                    bar,
                    clock: base,
                });
            }
        }
    }

    /// Takes the line of `id` away, if it has one.
    pub(crate) fn remove(&mut self, id: &str) {
        if let Some(index) = self.lines.iter().position(|line| line.id == id) {
            let line = self.lines.remove(index);
            // Erase first: a bar removed from the area is forgotten by it,
            // and what it last drew would stay on the screen.
            let _ = self.multi.clear();
            forget(&self.multi, &line.bar);
            for line in &self.lines {
                line.bar.tick();
            }
        }
    }

    /// Erases the area and takes every line away.
    pub(crate) fn clear(&mut self) {
        if self.lines.is_empty() {
            return;
        }
        let _ = self.multi.clear();
        for line in self.lines.drain(..) {
            forget(&self.multi, &line.bar);
        }
    }

    /// Runs `f` (which writes whole lines) with the area erased, then draws
    /// the area again below what `f` wrote.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.lines.is_empty() {
            f()
        } else {
            self.multi.suspend(f)
        }
    }
}

impl Drop for LiveArea {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Removes `bar` from `multi` without letting it draw its last state.
fn forget(multi: &MultiProgress, bar: &ProgressBar) {
    bar.disable_steady_tick();
    multi.remove(bar);
    // Removed, the bar draws nowhere; finishing it now keeps its drop from
    // drawing anything either.
    bar.finish_and_clear();
}

/// The line's template: a spinner, the status, and a clock that starts
/// from `base` (milliseconds, set with each report) and runs on with the
/// bar's own elapsed time, which is reset with each report.
fn style(base: Arc<AtomicU64>) -> ProgressStyle {
    ProgressStyle::default_spinner()
        .template("{spinner} {msg} · {clock}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .with_key(
            "clock",
            move |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let base = Duration::from_millis(base.load(Ordering::Relaxed));
                let _ = write!(out, "{}s", (base + state.elapsed()).as_secs());
            },
        )
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
