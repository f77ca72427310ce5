//! Wildcards, the small kind: `*`, `**` and `?`, as permission rules and
//! hook matchers use them.
//!
//! A pattern is matched against the whole text. `*` matches any run of
//! characters except `/`, `**` any run including `/`, and `?` one
//! character other than `/`. Everything else stands for itself. For tool
//! names and shell commands, which have no `/` to stop at, [`Wildcard::any`]
//! makes `*` match everything.
//!
//! Hand-written rather than a dependency: forty lines, and a rule's meaning
//! is easier to state when the code that decides it is on one screen.

/// One pattern, ready to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wildcard {
    pattern: Vec<char>,
    /// Whether `*` stops at `/` (paths) or not (names, commands).
    slash_is_special: bool,
}

impl Wildcard {
    /// A pattern for paths: `*` and `?` stay within one directory.
    pub fn path(pattern: &str) -> Self {
        Self {
            pattern: pattern.chars().collect(),
            slash_is_special: true,
        }
    }

    /// A pattern for names and commands: `*` matches any text.
    pub fn any(pattern: &str) -> Self {
        Self {
            pattern: pattern.chars().collect(),
            slash_is_special: false,
        }
    }

    /// Whether the pattern has a wildcard in it at all.
    pub fn is_literal(&self) -> bool {
        !self.pattern.iter().any(|c| matches!(c, '*' | '?'))
    }

    /// Whether `text`, all of it, matches.
    pub fn matches(&self, text: &str) -> bool {
        // ANCHOR: exercise-s19-matches
        let text: Vec<char> = text.chars().collect();
        self.match_from(0, &text, 0)
        // ANCHOR_END: exercise-s19-matches
    }

    // ANCHOR: match
    /// Backtracking over the pattern; fine for the few dozen characters a
    /// rule has.
    fn match_from(&self, p: usize, text: &[char], t: usize) -> bool {
        let Some(&c) = self.pattern.get(p) else {
            return t == text.len();
        };
        match c {
            '*' => {
                let double = self.pattern.get(p + 1) == Some(&'*');
                let next = if double { p + 2 } else { p + 1 };
                // `**/` also matches no directory at all: `src/**/x` takes `src/x`.
                if double
                    && self.pattern.get(next) == Some(&'/')
                    && self.match_from(next + 1, text, t)
                {
                    return true;
                }
                let crosses = double || !self.slash_is_special;
                // Try every length the star could take, shortest first.
                let mut end = t;
                loop {
                    if self.match_from(next, text, end) {
                        return true;
                    }
                    match text.get(end) {
                        Some('/') if !crosses => return false,
                        Some(_) => end += 1,
                        None => return false,
                    }
                }
            }
            '?' => match text.get(t) {
                Some('/') if self.slash_is_special => false,
                Some(_) => self.match_from(p + 1, text, t + 1),
                None => false,
            },
            literal => text.get(t) == Some(&literal) && self.match_from(p + 1, text, t + 1),
        }
    }
    // ANCHOR_END: match
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stop_single_stars_at_slashes() {
        let star = Wildcard::path("src/*.rs");
        assert!(star.matches("src/lib.rs"));
        assert!(!star.matches("src/settings/mod.rs"));
        let deep = Wildcard::path("src/**");
        assert!(deep.matches("src/lib.rs"));
        assert!(deep.matches("src/settings/mod.rs"));
        assert!(!deep.matches("tests/it.rs"));
        let middle = Wildcard::path("src/**/mod.rs");
        assert!(middle.matches("src/mod.rs"));
        assert!(middle.matches("src/a/b/mod.rs"));
        assert!(!middle.matches("src/a/b/lib.rs"));
        assert!(Wildcard::path("?.md").matches("a.md"));
        assert!(!Wildcard::path("?.md").matches("/.md"));
    }

    #[test]
    fn names_and_commands_let_stars_match_anything() {
        assert!(Wildcard::any("mcp__docs__*").matches("mcp__docs__search"));
        assert!(!Wildcard::any("mcp__docs__*").matches("mcp__git__log"));
        assert!(Wildcard::any("npm run *").matches("npm run test -- a/b"));
        assert!(Wildcard::any("bash").matches("bash"));
        assert!(!Wildcard::any("bash").matches("bashful"));
        assert!(Wildcard::any("bash").is_literal());
        assert!(!Wildcard::any("b?sh").is_literal());
    }
}
