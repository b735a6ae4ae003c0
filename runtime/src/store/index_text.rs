//! What the full-text index holds of a message: its prose, its tool calls flattened, and its CJK
//! characters one per token.

use memtrail_adapters::{Kind, Message, Part, ToolCall};

/// Cap on the bytes of one tool output copied into the search index (the full output stays in
/// `messages.parts`).
pub const INDEXED_OUTPUT_CAP: usize = 32 * 1024;

pub(crate) fn kind_from_str(s: &str) -> Kind {
    match s {
        "tool_call" => Kind::ToolCall,
        "tool_result" => Kind::ToolResult,
        "thinking" => Kind::Thinking,
        "summary" => Kind::Summary,
        "note" => Kind::Note,
        _ => Kind::Text,
    }
}

/// The two indexed columns of a message: its prose, and its tool calls flattened to
/// `name input-values output` lines (outputs capped at [`INDEXED_OUTPUT_CAP`] bytes).
pub fn render_index_text(m: &Message) -> (String, String) {
    (m.text(), render_tools(&m.parts))
}

/// The `tools` index text of a message's parts: each tool call as `name input-values` then its
/// output, and each unattached tool result's output, one per line (outputs capped at
/// [`INDEXED_OUTPUT_CAP`] bytes).
///
/// Since schema 13 the full-text index holds this text of every new message and takes a message
/// out with what this function gives of it then (`memtrail_tools`, `store::packed`): a change to
/// its output (or to [`INDEXED_OUTPUT_CAP`]) needs a migration that rebuilds the index (FTS5
/// `'rebuild'`). A test pins it (`render_tools_is_pinned`).
pub fn render_tools(parts: &[Part]) -> String {
    let mut tools = String::new();
    for p in parts {
        match p {
            Part::ToolCall(c) => {
                push_call(&mut tools, c);
            }
            Part::ToolResult { output, .. } => {
                tools.push_str(cap(output, INDEXED_OUTPUT_CAP));
                tools.push('\n');
            }
            _ => {}
        }
    }
    tools
}

/// True for Han ideographs, Hiragana, Katakana and Hangul: scripts written without spaces,
/// which unicode61 would index as one token per unbroken run.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x1100..=0x11FF    // Hangul Jamo
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x2FA1F) // CJK Extensions B-F, compatibility supplement
}

/// The `cjk` column: every run of CJK characters in `body` and `tools`, one character per token
/// (space-separated), runs on their own lines. `None` when there is no CJK text.
pub fn cjk_index_text(body: &str, tools: &str) -> Option<String> {
    let mut out = String::new();
    for text in [body, tools] {
        // Every CJK character is 3 or 4 bytes in UTF-8, led by a byte of 0xE1 or more: text
        // without one (most of it) is passed over without decoding.
        if !text.bytes().any(|b| b >= 0xE1) {
            continue;
        }
        let mut in_run = false;
        for c in text.chars() {
            if is_cjk(c) {
                if !in_run && !out.is_empty() {
                    out.push('\n');
                }
                if in_run {
                    out.push(' ');
                }
                out.push(c);
                in_run = true;
            } else {
                in_run = false;
            }
        }
    }
    if out.is_empty() { None } else { Some(out) }
}

fn push_call(out: &mut String, c: &ToolCall) {
    out.push_str(&c.name);
    out.push(' ');
    flatten_json(&c.input, out);
    out.push('\n');
    if let Some(o) = &c.output {
        out.push_str(cap(o, INDEXED_OUTPUT_CAP));
        out.push('\n');
    }
}

fn flatten_json(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            out.push_str(cap(s, INDEXED_OUTPUT_CAP));
            out.push(' ');
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| flatten_json(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| flatten_json(x, out)),
        serde_json::Value::Null => {}
        other => {
            out.push_str(&other.to_string());
            out.push(' ');
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub(crate) fn cap(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The output the full-text index depends on (see [`render_tools`]); changing it needs a
    /// migration that rebuilds the index.
    #[test]
    fn render_tools_is_pinned() {
        let parts: Vec<Part> = serde_json::from_value(json!([
            {"type": "text", "text": "not here"},
            {"type": "thinking", "text": "nor here"},
            {"type": "tool_call", "id": "c1", "name": "Edit", "tool": "edit",
             "input": {"file_path": "src/a.rs", "old_string": "x", "replace_all": false,
                       "edits": [{"line": 3}, null, 2.5]},
             "output": "ok", "is_error": false},
            {"type": "tool_call", "id": "c2", "name": "Bash", "tool": "shell",
             "input": {"command": "ls"}, "is_error": false},
            {"type": "tool_result", "call_id": "c9", "output": "orphan", "is_error": true}
        ]))
        .unwrap();
        assert_eq!(
            render_tools(&parts),
            "Edit src/a.rs x false 3 2.5 \nok\nBash ls \norphan\n"
        );
        let long = "é".repeat(INDEXED_OUTPUT_CAP);
        let capped = render_tools(&[Part::ToolResult {
            call_id: "c".into(),
            output: long.clone(),
            is_error: false,
        }]);
        assert_eq!(INDEXED_OUTPUT_CAP, 32 * 1024);
        assert_eq!(capped, format!("{}\n", &long[..INDEXED_OUTPUT_CAP]));
    }
}
