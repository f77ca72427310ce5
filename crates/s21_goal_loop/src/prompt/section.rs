//! One section of the system prompt, and the key that identifies a list of
//! them.

use std::fmt;

// ANCHOR: section
/// One part of the system prompt, about one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// What the section is about (`"identity"`, `"tools"`, …): the name the
    /// terminal shows when the prompt is assembled.
    pub topic: String,
    /// What the model reads. Blank text means the state behind the section
    /// is absent, and the section is left out.
    pub text: String,
    /// Whether the text belongs in the cached prefix.
    pub placement: Placement,
}

/// Where a section goes relative to the cache breakpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Changes rarely (once per session, or when the agent's setup
    /// changes): part of the prefix the provider caches.
    Stable,
    /// May change on any call (a clock, `git status`): after the system
    /// prompt's breakpoint, so a change keeps the tools and the stable
    /// sections cached. The conversation comes after it, though, and is
    /// stored again after every change: no section of this course is
    /// volatile.
    Volatile,
}

impl Section {
    /// A section of the stable prefix.
    pub fn new(topic: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            topic: topic.into(),
            text: text.into(),
            placement: Placement::Stable,
        }
    }

    /// A section placed after the cache breakpoint.
    pub fn volatile(topic: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            placement: Placement::Volatile,
            ..Self::new(topic, text)
        }
    }

    /// Whether the section has anything to say.
    pub fn is_present(&self) -> bool {
        !self.text.trim().is_empty()
    }
}
// ANCHOR_END: section

// ANCHOR: key
/// A fingerprint of everything the assembled prompt depends on: the topic,
/// placement and text of each present section, in order.
///
/// The hash is 64-bit FNV-1a, written out here rather than taken from
/// [`std::hash::DefaultHasher`], whose algorithm the standard library may
/// change between Rust releases. FNV-1a is fixed by its specification, so
/// the same sections give the same key in every build and every run, and a
/// key in one run's log can be compared with another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PromptKey(pub u64);

impl PromptKey {
    /// The key of `sections`. Absent sections do not count: leaving a
    /// section out and giving it blank text build the same prompt.
    pub fn of(sections: &[Section]) -> Self {
        let mut hash = Fnv1a::new();
        for section in sections.iter().filter(|section| section.is_present()) {
            hash.write(&[match section.placement {
                Placement::Stable => 0,
                Placement::Volatile => 1,
            }]);
            // Each string is preceded by its length, so moving text from
            // one field to the next ("ab" + "c" vs "a" + "bc") changes the
            // key.
            hash.write_str(&section.topic);
            hash.write_str(&section.text);
        }
        Self(hash.finish())
    }
}

impl fmt::Display for PromptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// 64-bit FNV-1a: for each byte, xor it in, then multiply by the prime.
struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Self(Self::OFFSET_BASIS)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    fn write_str(&mut self, text: &str) {
        self.write(&(text.len() as u64).to_le_bytes());
        self.write(text.as_bytes());
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
// ANCHOR_END: key

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        let of = |text: &str| {
            let mut hash = Fnv1a::new();
            hash.write(text.as_bytes());
            hash.finish()
        };
        assert_eq!(of(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(of("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(of("foobar"), 0x8594_4171_f739_67e8);
    }
}
