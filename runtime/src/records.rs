//! Records as every store backend receives them (DESIGN principle 5): a reader's records with
//! each tool result folded into its call when both are in the batch, and every text, tool input
//! and output redacted ([`crate::redact::redact_record`]) before anything derived from it (parts
//! JSON, search columns) is written. Ingest prepares them before it takes the store's write
//! lock. What depends on the stored messages stays in the store's writer: the redaction of a
//! message merged with its stored copy (secrets across parts, [`crate::seams`]) and the events
//! extracted from a message's whole, current content.

use memtrail_adapters::{Part, Record};

/// A batch of records ready for [`crate::store::Writer::apply_prepared`].
#[derive(Debug)]
pub struct Prepared {
    records: Vec<Record>,
    /// Tool results folded into their calls.
    folded: u64,
}

impl Prepared {
    /// Fold the batch's tool results into their calls ([`fold_results`]), then redact every
    /// record in place (no copy of its text).
    pub fn new(mut records: Vec<Record>) -> Prepared {
        let folded = fold_results(&mut records);
        for rec in &mut records {
            crate::redact::redact_record(rec);
        }
        Prepared { records, folded }
    }

    /// The records, and how many tool results were folded into their calls.
    pub(crate) fn into_parts(self) -> (Vec<Record>, u64) {
        (self.records, self.folded)
    }
}

/// Attach each tool result to its call when the call's message is earlier in the same batch,
/// and drop the result record: the message is then written once, with its output, instead of
/// written, then read back, re-rendered and re-indexed (an FTS5 delete and insert) per result.
/// The outcome in the store is the same as applying the records one by one. Batches holding a
/// `Rewind` or `Replace` are left alone (their order matters). Returns how many results were
/// folded.
fn fold_results(records: &mut Vec<Record>) -> u64 {
    if records
        .iter()
        .any(|r| matches!(r, Record::Rewind { .. } | Record::Replace(_)))
    {
        return 0;
    }
    // call id -> (record index, part index) of the latest call with that id seen so far.
    let mut calls: std::collections::HashMap<String, (usize, usize)> =
        std::collections::HashMap::new();
    let mut folded = 0;
    let mut keep = vec![true; records.len()];
    for j in 0..records.len() {
        match &records[j] {
            Record::Message(m) => {
                for (k, p) in m.parts.iter().enumerate() {
                    if let Part::ToolCall(c) = p {
                        calls.insert(c.id.clone(), (j, k));
                    }
                }
            }
            Record::ToolResult { call_id, .. } => {
                let Some(&(i, k)) = calls.get(call_id) else {
                    continue;
                };
                let Record::ToolResult {
                    output,
                    is_error,
                    exit_code,
                    ..
                } = std::mem::replace(
                    &mut records[j],
                    Record::Rewind {
                        message_id: String::new(),
                    },
                )
                else {
                    unreachable!("matched above")
                };
                if let Record::Message(m) = &mut records[i]
                    && let Some(Part::ToolCall(c)) = m.parts.get_mut(k)
                {
                    c.output = Some(output);
                    c.is_error = is_error;
                    c.exit_code = exit_code;
                }
                keep[j] = false;
                folded += 1;
            }
            _ => {}
        }
    }
    if folded > 0 {
        let mut it = keep.into_iter();
        records.retain(|_| it.next().unwrap_or(true));
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtrail_adapters::{Kind, Message, Role, ToolCall};

    /// A tool result in the batch of its call is folded into it, and the output it brings is
    /// redacted with the rest of the message before the store sees it.
    #[test]
    fn results_are_folded_and_everything_redacted() {
        let call = ToolCall {
            id: "c1".into(),
            name: "Bash".into(),
            tool: "bash".into(),
            input: serde_json::json!({"command": "env"}),
            output: None,
            is_error: false,
            exit_code: None,
        };
        let records = vec![
            Record::Message(Message {
                id: "a1".into(),
                role: Role::Assistant,
                kind: Kind::ToolCall,
                parts: vec![Part::ToolCall(call)],
                timestamp: Some(1),
                model: None,
            }),
            Record::ToolResult {
                call_id: "c1".into(),
                output: "key id ASIAZ7QK2MNB4XYT9WQL here".into(),
                is_error: false,
                exit_code: Some(0),
                timestamp: Some(2),
            },
        ];
        let (records, folded) = Prepared::new(records).into_parts();
        assert_eq!(folded, 1);
        assert_eq!(records.len(), 1);
        let Record::Message(m) = &records[0] else {
            panic!("{records:?}")
        };
        let Part::ToolCall(c) = &m.parts[0] else {
            panic!("{m:?}")
        };
        assert_eq!(
            c.output.as_deref(),
            Some("key id [redacted:aws_access_key] here")
        );
        assert_eq!(c.exit_code, Some(0));
    }
}
