//! Records as every store backend receives them (DESIGN principle 5): a reader's records with
//! each tool result folded into its call when both are in the batch, and every text, tool input
//! and output redacted ([`crate::redact::redact_record`]) before anything derived from it (parts
//! JSON, search columns) is written. Ingest prepares them before it takes the store's write
//! lock.
//!
//! What depends on the stored messages happens in the store's writer, through the [`Enrich`]
//! hook that ingest supplies with the batch (the store calls no redaction or event extraction
//! of its own; the test `store::no_enrich_inside` enforces it): the redaction of a message merged
//! with its stored copy (secrets across parts, [`crate::seams`]) and the events extracted from a
//! message's whole, current content ([`crate::events::extract`]).

use crate::Result;
use crate::events::Event;
use crate::store::Applied;
use memtrail_adapters::{Agent, Message, Part, Record};
use serde_json::Value;
use std::borrow::Cow;

/// Redaction and event extraction, as the store applies them where it holds the stored copy of
/// what it writes (a message merged with its stored parts, a late tool result, the schema-3
/// migration, `redact --rescan`). Implemented by ingest ([`Standard`]); passed to the store as a
/// type parameter ([`Prepared`]'s, or a writer method's: session titles, cursors' reader state,
/// notes), so each call is static and inlined (no `dyn` on the hot path).
pub trait Enrich {
    /// `text` with `<private>` spans and secrets replaced ([`crate::redact::redact`]); borrowed
    /// when nothing was replaced.
    fn redact<'s>(&self, text: &'s str) -> Cow<'s, str>;
    /// A session title redacted ([`crate::redact::redact_title`]).
    fn redact_title<'s>(&self, title: &'s str) -> Cow<'s, str>;
    /// Every string inside a JSON value redacted in place ([`crate::redact::redact_json`]).
    fn redact_json(&self, v: &mut Value);
    /// Everything a record would write redacted in place ([`crate::redact::redact_record`]).
    fn redact_record(&self, r: &mut Record);
    /// Every text, thinking, tool input and output of a message redacted in place, one string
    /// at a time ([`crate::redact::redact_message`]).
    fn redact_parts(&self, m: &mut Message);
    /// A whole message (stored parts and new ones, each already redacted) redacted across its
    /// parts in place ([`crate::seams::redact_message`]); idempotent.
    fn redact_merged(&self, m: &mut Message);
    /// The events of message `m` of an `agent` session ([`crate::events::extract`]).
    fn events(&self, agent: Agent, m: &Message) -> Vec<Event>;
    /// A session title an older memtrail cut from the user prompt `prompt` (as stored:
    /// redacted, its lines kept), redacted as the prompt is
    /// ([`crate::redact::title_from_prompt`]); `None` when the title is not the prompt's or
    /// would not change. By default `None`: the title is then only redacted as a title
    /// ([`Enrich::redact_title`]).
    fn redact_title_as_prompt(&self, _title: &str, _prompt: &str) -> Option<String> {
        None
    }
}

/// memtrail's redaction rules ([`crate::redact`], [`crate::seams`]) and event extraction
/// ([`crate::events`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Standard;

impl Enrich for Standard {
    #[inline]
    fn redact<'s>(&self, text: &'s str) -> Cow<'s, str> {
        crate::redact::redact(text)
    }
    #[inline]
    fn redact_title<'s>(&self, title: &'s str) -> Cow<'s, str> {
        crate::redact::redact_title(title)
    }
    #[inline]
    fn redact_json(&self, v: &mut Value) {
        crate::redact::redact_json(v)
    }
    #[inline]
    fn redact_record(&self, r: &mut Record) {
        crate::redact::redact_record(r)
    }
    #[inline]
    fn redact_parts(&self, m: &mut Message) {
        crate::redact::redact_message(m)
    }
    #[inline]
    fn redact_merged(&self, m: &mut Message) {
        crate::seams::redact_message(m)
    }
    #[inline]
    fn events(&self, agent: Agent, m: &Message) -> Vec<Event> {
        crate::events::extract(agent, m)
    }
    #[inline]
    fn redact_title_as_prompt(&self, title: &str, prompt: &str) -> Option<String> {
        crate::redact::title_from_prompt(title, prompt)
    }
}

/// A batch of records ready for [`crate::store::Writer::apply_prepared`], with the [`Enrich`]
/// the store applies to what it merges.
#[derive(Debug)]
pub struct Prepared<E: Enrich = Standard> {
    records: Vec<Record>,
    /// Tool results folded into their calls.
    folded: u64,
    enrich: E,
    /// Empty, or one entry per record: for a `Record::Message`, what it writes if no message
    /// of its id is stored yet ([`Prepared::with_fresh`]).
    fresh: Vec<Option<Fresh>>,
}

/// The row of a message that is new to the store, computed before the write lock is taken
/// (on `memtrail import`'s reading thread, [`Prepared::with_fresh`]): exactly what the store's
/// writer would derive from the message when it finds no stored copy to merge with.
#[derive(Debug)]
pub struct Fresh {
    /// The message redacted across its parts ([`Enrich::redact_merged`]).
    pub(crate) message: Message,
    /// The prose search column and the CJK one ([`crate::store::render_index_text`],
    /// [`crate::store::cjk_index_text`]); the tool calls' column is rendered from `parts` when read.
    pub(crate) body: String,
    pub(crate) cjk: Option<String>,
    /// `parts` as stored: the JSON, compressed when that is smaller (`store::packed`).
    pub(crate) parts: crate::store::StoredParts,
    /// The session's agent the events were extracted for (`None`: not extracted).
    pub(crate) agent: Option<Agent>,
    /// The message's events ([`crate::store::message_events`]), not yet redacted.
    pub(crate) events: Vec<Event>,
}

impl Prepared {
    /// [`Prepared::with`] memtrail's rules ([`Standard`]).
    pub fn new(records: Vec<Record>) -> Prepared {
        Prepared::with(records, Standard)
    }
}

impl<E: Enrich> Prepared<E> {
    /// Fold the batch's tool results into their calls ([`fold_results`]), then redact every
    /// record in place with `enrich` (no copy of its text).
    pub fn with(mut records: Vec<Record>, enrich: E) -> Prepared<E> {
        let folded = fold_results(&mut records);
        for rec in &mut records {
            enrich.redact_record(rec);
        }
        Prepared {
            records,
            folded,
            enrich,
            fresh: Vec::new(),
        }
    }

    /// [`Prepared::with`], and for each message the row it writes if it is new to the store
    /// ([`Fresh`]), for a session of `agent`: work the writer then skips. For a thread that
    /// prepares while another writes (`memtrail import`); a hook does not pay for it.
    ///
    /// Errors: a message's parts do not serialize to JSON.
    pub fn with_fresh(records: Vec<Record>, enrich: E, agent: Agent) -> Result<Prepared<E>> {
        let mut p = Prepared::with(records, enrich);
        let mut fresh = Vec::with_capacity(p.records.len());
        for rec in &p.records {
            let Record::Message(m) = rec else {
                fresh.push(None);
                continue;
            };
            let mut message = m.clone();
            p.enrich.redact_merged(&mut message);
            let (body, tools) = crate::store::render_index_text(&message);
            let cjk = crate::store::cjk_index_text(&body, &tools);
            let parts = crate::store::pack_parts(&message.parts, &body)?;
            let events = crate::store::message_events(agent, &message, &p.enrich);
            fresh.push(Some(Fresh {
                message,
                body,
                cjk,
                parts,
                agent: Some(agent),
                events,
            }));
        }
        p.fresh = fresh;
        Ok(p)
    }

    /// The records, how many tool results were folded into their calls, the enricher, and
    /// the precomputed rows (empty, or one per record).
    pub(crate) fn into_parts(self) -> (Vec<Record>, u64, E, Vec<Option<Fresh>>) {
        (self.records, self.folded, self.enrich, self.fresh)
    }
}

impl crate::store::Writer<'_> {
    /// Apply reader records to a session, with merge semantics (see `model::Record`): as
    /// [`crate::store::Writer::apply_prepared`] after [`Prepared::new`] (memtrail's rules; ingest
    /// prepares its records before it takes the write lock). Defined here, not in the store: the
    /// store does not choose the rules.
    pub fn apply(&self, session_id: i64, records: Vec<Record>) -> Result<Applied> {
        self.apply_prepared(session_id, Prepared::new(records))
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
        let (records, folded, _, _) = Prepared::new(records).into_parts();
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
