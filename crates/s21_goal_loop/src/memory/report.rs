//! The memory layer's notices, so the user can watch it work:
//! `[memory] …` for what it did, `[memory] warning: …` for what it skipped.

use shared::notice::Notices;

/// The tag of the memory layer's notices.
pub const MEMORY_TAG: &str = "memory";

/// Reports what the memory layer did.
pub fn note(notices: &Notices, text: &str) {
    notices.emit(MEMORY_TAG, text);
}

/// Reports something the memory layer skipped or could not do.
pub fn warn(notices: &Notices, text: &str) {
    notices.emit(MEMORY_TAG, format!("warning: {text}"));
}
