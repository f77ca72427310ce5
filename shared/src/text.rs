//! Cutting text without splitting a character, and counting nouns.
//!
//! Rust strings are UTF-8, and slicing one in the middle of a multi-byte
//! character panics. Every preview and every output limit in the course goes
//! through these two functions instead.

/// The first `max_chars` characters of `text`, with `…` appended when
/// anything was cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => format!("{}…", &text[..byte_index]),
        None => text.to_string(),
    }
}

/// Limits `text` to `max_chars` characters and says how much was cut:
/// the marker names the number of characters dropped, so the model knows
/// the output is incomplete.
pub fn limit_output(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => {
            let dropped = text[byte_index..].chars().count();
            format!(
                "{}\n... [output truncated: {dropped} more characters not shown]",
                &text[..byte_index]
            )
        }
        None => text.to_string(),
    }
}

/// `1 round`, `3 rounds`, `1 memory`, `2 memories`: the count and the
/// noun that fits it.
pub fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_splits_a_character() {
        let text = "héllo wörld ✓✓✓";
        for max in 0..text.chars().count() + 2 {
            let cut = truncate_chars(text, max);
            assert!(cut.chars().count() <= max + 1);
            let limited = limit_output(text, max);
            assert!(limited.starts_with(&text.chars().take(max).collect::<String>()));
        }
    }

    #[test]
    fn plural_picks_the_noun_for_the_count() {
        assert_eq!(plural(1, "memory", "memories"), "1 memory");
        assert_eq!(plural(0, "memory", "memories"), "0 memories");
        assert_eq!(plural(3, "round", "rounds"), "3 rounds");
    }

    #[test]
    fn marker_counts_dropped_characters() {
        let limited = limit_output("aé✓bcd", 3);
        assert_eq!(
            limited,
            "aé✓\n... [output truncated: 3 more characters not shown]"
        );
        assert_eq!(limit_output("short", 10), "short");
    }
}
