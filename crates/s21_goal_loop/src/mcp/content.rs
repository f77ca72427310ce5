//! What an MCP tool's result becomes for the model.
//!
//! A tool result in this course is text. An MCP result is a list of
//! content blocks — text, images, audio, embedded resources, links to
//! resources — plus, optionally, `structuredContent` (any JSON). Text is
//! passed on as it is; everything else is summarised in one line that
//! says what it was, so the model knows something came back that it cannot
//! read here. `structuredContent` is shown when the result has no text: a
//! server is meant to repeat it as text, and not every server does.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use shared::text::truncate_chars;
use shared::tools::MAX_OUTPUT_CHARS;

// ANCHOR: render
/// The result as the text of a tool result.
pub fn render(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(block).collect();
    let has_text = result
        .content
        .iter()
        .any(|content| matches!(content, ContentBlock::Text(_)));
    if !has_text && let Some(structured) = &result.structured_content {
        parts.push(format!("structured content: {structured}"));
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    truncate_chars(&text, MAX_OUTPUT_CHARS)
}

/// One content block: text as it is, anything else summarised.
fn block(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image: {}, {} bytes, not shown]",
            image.mime_type,
            decoded_len(&image.data)
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {} bytes, not played]",
            audio.mime_type,
            decoded_len(&audio.data)
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes, binary, not shown]",
                mime_type.as_deref().unwrap_or("unknown type"),
                decoded_len(blob)
            ),
            // A kind of resource this SDK version may add later.
            #[allow(unreachable_patterns)]
            _ => "[resource of an unknown kind, not shown]".to_string(),
        },
        ContentBlock::ResourceLink(link) => {
            let mut line = format!("[resource link: {} ({})", link.uri, link.name);
            if let Some(description) = &link.description {
                line.push_str(&format!(": {description}"));
            }
            line.push(']');
            line
        }
        // A content type newer than this SDK version knows.
        #[allow(unreachable_patterns)]
        _ => "[content of an unknown type, not shown]".to_string(),
    }
}
// ANCHOR_END: render

/// How many bytes base64 text of this length decodes to.
fn decoded_len(base64: &str) -> usize {
    let padding = base64.bytes().rev().take_while(|b| *b == b'=').count();
    (base64.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Resource;
    use serde_json::json;

    #[test]
    fn text_passes_and_the_rest_is_summarised() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("AAAA", "image/png"),
            ContentBlock::embedded_text("docs://a", "the text"),
            ContentBlock::resource_link(Resource::new("docs://b", "b")),
        ]);
        assert_eq!(
            render(&result),
            "hello\n[image: image/png, 3 bytes, not shown]\n[resource docs://a]\nthe text\n\
             [resource link: docs://b (b)]"
        );
    }

    #[test]
    fn structured_content_shows_only_without_text() {
        let mut result = CallToolResult::structured(json!({"n": 1}));
        result.content.clear();
        assert_eq!(render(&result), r#"structured content: {"n":1}"#);
        let mut result = CallToolResult::success(vec![ContentBlock::text("one")]);
        result.structured_content = Some(json!({"n": 1}));
        assert_eq!(render(&result), "one");
        assert_eq!(
            render(&CallToolResult::success(vec![])),
            "(the tool returned no content)"
        );
    }
}
