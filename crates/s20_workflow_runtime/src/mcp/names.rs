//! The names MCP tools get in the agent's tool pool.
//!
//! A server names its tools as it likes; the model's API does not: tool
//! names must match `^[a-zA-Z0-9_-]{1,64}$`. And two servers may both
//! have a `search`. So every MCP tool is offered as
//! `mcp__<server>__<tool>`, each part normalised (any other character
//! becomes `_`), the whole cut to 64 characters.
//!
//! Normalising and cutting can make two different tools one name
//! (`my.docs` and `my_docs`; two long names that differ after character
//! 64). Such a collision is refused, never resolved by letting one tool
//! shadow the other: the model would call a tool it did not mean.

// ANCHOR: names
/// The prefix of every MCP tool's name.
pub const PREFIX: &str = "mcp__";

/// The longest tool name the model's API accepts.
pub const MAX_NAME_CHARS: usize = 64;

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn normalize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The name the tool `tool` of server `server` is offered under:
/// `mcp__<server>__<tool>`, normalised, at most [`MAX_NAME_CHARS`] long.
pub fn tool_name(server: &str, tool: &str) -> String {
    // ANCHOR: exercise-s18-name
    let mut name = format!("{PREFIX}{}__{}", normalize(server), normalize(tool));
    // Normalised names are ASCII, so a byte index is a character index.
    name.truncate(MAX_NAME_CHARS);
    name
    // ANCHOR_END: exercise-s18-name
}
// ANCHOR_END: names

/// What became of one tool a server listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Naming {
    /// Offered under this name.
    Offered(String),
    /// Not offered: its name is taken.
    Refused { name: String, taken_by: String },
}

// ANCHOR: assign
/// Assigns names to `tools` (the server's own names) of `server`, none of
/// which may be one of `taken` (the names of every other tool the agent
/// offers, with who has them). A tool whose name is taken — by another
/// server's tool or by an earlier tool of the same server — is refused.
pub fn assign<'a>(
    server: &str,
    tools: impl IntoIterator<Item = &'a str>,
    taken: &[(String, String)],
) -> Vec<Naming> {
    let mut used: Vec<(String, String)> = taken.to_vec();
    tools
        .into_iter()
        .map(|tool| {
            let name = tool_name(server, tool);
            if let Some((_, owner)) = used.iter().find(|(used, _)| *used == name) {
                return Naming::Refused {
                    name,
                    taken_by: owner.clone(),
                };
            }
            used.push((name.clone(), format!("`{tool}` of server `{server}`")));
            Naming::Offered(name)
        })
        .collect()
}
// ANCHOR_END: assign

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_characters_become_underscores() {
        assert_eq!(normalize("my.docs server/v2"), "my_docs_server_v2");
        assert_eq!(normalize("ok_name-1"), "ok_name-1");
        assert_eq!(normalize("héllo"), "h_llo");
        assert_eq!(
            tool_name("my docs", "search.all"),
            "mcp__my_docs__search_all"
        );
    }

    #[test]
    fn names_are_cut_to_sixty_four_characters() {
        let name = tool_name("server", &"x".repeat(100));
        assert_eq!(name.len(), MAX_NAME_CHARS);
        assert!(name.starts_with("mcp__server__xxx"));
    }

    #[test]
    fn a_name_made_equal_by_normalising_or_cutting_is_refused() {
        let taken = vec![(
            "mcp__my_docs__search".to_string(),
            "`search` of server `my_docs`".to_string(),
        )];
        let namings = assign("my.docs", ["search", "fetch"], &taken);
        assert_eq!(
            namings[0],
            Naming::Refused {
                name: "mcp__my_docs__search".to_string(),
                taken_by: "`search` of server `my_docs`".to_string(),
            }
        );
        assert_eq!(
            namings[1],
            Naming::Offered("mcp__my_docs__fetch".to_string())
        );

        let long_a = format!("{}a", "t".repeat(80));
        let long_b = format!("{}b", "t".repeat(80));
        let namings = assign("s", [long_a.as_str(), long_b.as_str()], &[]);
        assert!(matches!(namings[0], Naming::Offered(_)));
        assert!(
            matches!(&namings[1], Naming::Refused { taken_by, .. } if taken_by.contains("of server `s`"))
        );
    }
}
