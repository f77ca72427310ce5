//! The `load_skill` tool: a skill's full text, on demand, as a tool result.
//!
//! `{"name": "code-review"}` returns the skill's `SKILL.md` body under a
//! short header that says where the skill lives and which other files it
//! has. `{"name": "code-review", "file": "references/checklist.md"}`
//! returns one of those files. Both arguments are looked up in the
//! registry; neither is ever used as a path, so `../x`, `/etc/passwd` or
//! `code-review/../../secrets` are just names that match nothing.
//!
//! The `file` argument is there because the skills directory may be
//! outside the workspace (the course's skills, when you work in a scratch
//! directory), where `read_file` cannot reach it.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::text::limit_output;
use shared::tools::input::parse_input;
use shared::tools::{MAX_FILE_BYTES, MAX_OUTPUT_CHARS};

use super::registry::{Skill, SkillRegistry};

/// The tool's name.
pub const NAME: &str = "load_skill";

#[derive(Deserialize)]
struct Input {
    name: String,
    #[serde(default)]
    file: Option<String>,
}

/// What the model is told about `load_skill`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        NAME,
        "Load a skill's full instructions by name, from the skills listed in the system \
         prompt. Load a skill before a task it covers, then follow it. With `file`, load \
         one of the skill's own files (the list comes with the skill), e.g. \
         references/checklist.md.",
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, exactly as in the catalog."},
                "file": {"type": "string", "description": "Optional: one of the skill's files, as listed when the skill was loaded."}
            },
            "required": ["name"]
        }),
    )
}

// ANCHOR: call
/// Runs the model's `load_skill` call. `workspace` is the workspace root,
/// used to tell the model whether `read_file` can reach the skill's files.
pub async fn call(registry: &SkillRegistry, workspace: &Path, input: &Value) -> ToolOutput {
    let input: Input = match parse_input(NAME, input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    let Some(skill) = registry.get(&input.name) else {
        return ToolOutput::error(format!(
            "Unknown skill {:?}. Skills are loaded by name, not by path. Available skills: {}",
            input.name,
            registry.names()
        ));
    };
    // ANCHOR: exercise-s07-load
    match &input.file {
        None => ToolOutput::ok(render_skill(skill, workspace)),
        Some(file) => read_skill_file(skill, file).await,
    }
    // ANCHOR_END: exercise-s07-load
}
// ANCHOR_END: call

/// The skill's body under a header with its folder and its files.
fn render_skill(skill: &Skill, workspace: &Path) -> String {
    let mut text = format!(
        "<skill name=\"{}\">\nSkill folder: {}\n",
        skill.name,
        skill.dir.display()
    );
    if !skill.files.is_empty() {
        let in_workspace = skill.dir.strip_prefix(workspace).ok();
        text.push_str(&format!(
            "Files in this skill (read one with load_skill {{\"name\": \"{}\", \"file\": \"<file>\"}}",
            skill.name
        ));
        if let Some(relative) = in_workspace {
            text.push_str(&format!(
                ", or with read_file at {}/<file>",
                relative.display()
            ));
        }
        text.push_str("; run a script with bash using its full path in the skill folder):\n");
        for file in &skill.files {
            text.push_str(&format!("- {file}\n"));
        }
    }
    text.push('\n');
    text.push_str(skill.body.trim_end());
    text.push_str("\n</skill>");
    limit_output(&text, MAX_OUTPUT_CHARS)
}

/// One of the skill's listed files. Anything not on the list is refused
/// before the file system is touched.
async fn read_skill_file(skill: &Skill, file: &str) -> ToolOutput {
    if !skill.files.iter().any(|listed| listed == file) {
        let listed = if skill.files.is_empty() {
            "It has no files besides SKILL.md.".to_string()
        } else {
            format!("Its files: {}", skill.files.join(", "))
        };
        return ToolOutput::error(format!(
            "Skill {:?} has no file {file:?}. {listed}",
            skill.name
        ));
    }
    let path = skill.dir.join(file);
    // The list was made at start-up; check again that the file is still a
    // plain file, not one swapped for a symlink since.
    if let Ok(metadata) = tokio::fs::symlink_metadata(&path).await {
        if !metadata.is_file() {
            return ToolOutput::error(format!(
                "{file} of skill {} is no longer a plain file",
                skill.name
            ));
        }
        if metadata.len() > MAX_FILE_BYTES {
            return ToolOutput::error(format!(
                "{file} of skill {} is {} bytes, too big to load",
                skill.name,
                metadata.len()
            ));
        }
    }
    let bytes = match tokio::fs::read(&path).await {
        Ok(bytes) => bytes,
        Err(error) => {
            return ToolOutput::error(format!(
                "Cannot read {file} of skill {}: {error}",
                skill.name
            ));
        }
    };
    // A NUL byte means binary, as in read_file.
    if bytes.contains(&0) {
        return ToolOutput::error(format!(
            "{file} of skill {} looks like a binary file; load_skill only shows text",
            skill.name
        ));
    }
    let text = format!(
        "<skill-file skill=\"{}\" file=\"{file}\">\n{}\n</skill-file>",
        skill.name,
        String::from_utf8_lossy(&bytes).trim_end()
    );
    ToolOutput::ok(limit_output(&text, MAX_OUTPUT_CHARS))
}
