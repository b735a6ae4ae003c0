//! Vectors for search by meaning (schema 7): the backlog (messages above the high-water mark
//! plus rewritten ones), what text each message gives the encoder, a rewrite that drops a
//! message's vectors and queues it again, a model change that starts over, a deleted session's
//! vectors going with it, and a failed batch writing nothing.

use crate::index_queue::{open, session};
use crate::support::{bash, text};
use memtrail_adapters::Record;
use memtrail_runtime::store::Store;

/// Embeds everything waiting with a 2-d encoder (the text's length in bytes and 1, scaled to
/// unit length), returning the texts it was given.
fn embed(store: &Store, model: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let n = store
        .embed_batch(model, 2, 100, &mut |t| {
            seen.push(t.to_string());
            let (a, b) = (t.len() as f32, 1.0f32);
            let n = (a * a + b * b).sqrt();
            vec![vec![a / n, b / n]]
        })
        .unwrap();
    assert!(n >= seen.len());
    seen
}

#[test]
fn backlog_rewrite_model_change_and_delete() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    store
        .write(|w| {
            w.apply(
                s,
                vec![
                    text("u1", "the flamingo migration"),
                    bash("a1", "c1", "cargo build"),
                ],
            )
        })
        .unwrap();
    assert_eq!(store.embed_model().unwrap(), None);
    assert_eq!(store.embed_backlog("m@1/2").unwrap(), 2);
    assert_eq!(
        embed(&store, "m@1/2"),
        ["the flamingo migration", "Bash cargo build"]
    );
    assert_eq!(store.embed_model().unwrap().as_deref(), Some("m@1/2"));
    assert_eq!(store.embed_backlog("m@1/2").unwrap(), 0);
    let v = store.load_vectors("m@1/2", 2).unwrap();
    assert_eq!(v.len(), 2);
    // "the flamingo migration" is 22 bytes: (22, 1)/√485 → int8 (127, 6) with scale
    // (22/√485)/127 (1/√485 × 127/(22/√485) = 5.77 → 6).
    let scale = 22.0f64 / 485f64.sqrt() / 127.0;
    assert!((v.scales[0] as f64 - scale).abs() < 1e-9, "{}", v.scales[0]);
    assert_eq!(&v.data[..2], &[127, 6]);
    assert_eq!(
        store.embed_batch("m@1/2", 2, 100, &mut |_| vec![]).unwrap(),
        0
    );

    // A late tool result rewrites the call: its vectors go, and it waits again.
    store
        .write(|w| {
            w.apply(
                s,
                vec![Record::ToolResult {
                    call_id: "c1".into(),
                    output: "error[E0308]: mismatched types".into(),
                    is_error: true,
                    timestamp: None,
                    exit_code: None,
                }],
            )
        })
        .unwrap();
    assert_eq!(store.embed_backlog("m@1/2").unwrap(), 1);
    assert_eq!(store.load_vectors("m@1/2", 2).unwrap().len(), 1);
    assert_eq!(
        embed(&store, "m@1/2"),
        ["Bash cargo build\nerror[E0308]: mismatched types"]
    );
    assert_eq!(store.load_vectors("m@1/2", 2).unwrap().len(), 2);

    // Another model: everything waits, and its first batch replaces the old vectors.
    assert_eq!(store.embed_backlog("other@2/2").unwrap(), 2);
    assert_eq!(store.load_vectors("other@2/2", 2).unwrap().len(), 0);
    assert_eq!(embed(&store, "other@2/2").len(), 2);
    assert_eq!(store.load_vectors("m@1/2", 2).unwrap().len(), 0);
    assert_eq!(store.load_vectors("other@2/2", 2).unwrap().len(), 2);

    // A wrong dimension fails the batch and writes nothing.
    let s2 = session(&mut store, "s2");
    store
        .write(|w| w.apply(s2, vec![text("u9", "pelican")]))
        .unwrap();
    let e = store
        .embed_batch("other@2/2", 2, 100, &mut |_| vec![vec![1.0, 0.0, 0.0]])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        memtrail_runtime::Error::Invalid("the model gave a vector of 3 values, not 2".into())
            .to_string()
    );
    assert_eq!(store.embed_backlog("other@2/2").unwrap(), 1);

    // Deleting the newest session: its vectors go, and an id given again is embedded.
    assert_eq!(embed(&store, "other@2/2"), ["pelican"]);
    memtrail_runtime::maintenance::delete_session(&mut store, "s2").unwrap();
    assert_eq!(store.load_vectors("other@2/2", 2).unwrap().len(), 2);
    let s3 = session(&mut store, "s3");
    store
        .write(|w| w.apply(s3, vec![text("u1", "heron")]))
        .unwrap();
    assert_eq!(store.embed_backlog("other@2/2").unwrap(), 1);
    assert_eq!(embed(&store, "other@2/2"), ["heron"]);
}

/// The two-phase write (read without a lock, encode, write in a short transaction): a message
/// rewritten between the read and the write keeps waiting (its stale vector is not written), a
/// message deleted meanwhile is skipped, and work taken before another process moved the
/// backlog writes nothing.
#[test]
fn a_write_after_a_rewrite_or_a_race_keeps_the_store_right() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    store
        .write(|w| {
            w.apply(
                s,
                vec![
                    text("u1", "the flamingo migration"),
                    bash("a1", "c1", "cargo build"),
                ],
            )
        })
        .unwrap();
    let unit = |t: &str| {
        let (a, b) = (t.len() as f32, 1.0f32);
        let n = (a * a + b * b).sqrt();
        vec![vec![a / n, b / n]]
    };
    let work = store.embed_take("m@1/2", 100).unwrap();
    assert_eq!(
        work.texts().collect::<Vec<_>>(),
        ["the flamingo migration", "Bash cargo build"]
    );
    // The tool result arrives while the batch is being encoded.
    store
        .write(|w| {
            w.apply(
                s,
                vec![Record::ToolResult {
                    call_id: "c1".into(),
                    output: "Finished dev profile".into(),
                    is_error: false,
                    timestamp: None,
                    exit_code: None,
                }],
            )
        })
        .unwrap();
    let vectors: Vec<_> = work.texts().map(unit).collect();
    assert_eq!(store.embed_write(work, 2, &vectors).unwrap(), 2);
    // The prompt's vector is written; the rewritten call waits, with none.
    let v = store.load_vectors("m@1/2", 2).unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(store.embed_backlog("m@1/2").unwrap(), 1);
    assert_eq!(
        embed(&store, "m@1/2"),
        ["Bash cargo build\nFinished dev profile"]
    );
    assert_eq!(store.load_vectors("m@1/2", 2).unwrap().len(), 2);

    // Work taken, then the backlog moved by someone else: nothing is written, 0 is returned.
    store
        .write(|w| w.apply(s, vec![text("u2", "second prompt")]))
        .unwrap();
    let stale = store.embed_take("m@1/2", 100).unwrap();
    let other = store.embed_take("m@1/2", 100).unwrap();
    let vo: Vec<_> = other.texts().map(unit).collect();
    assert_eq!(store.embed_write(other, 2, &vo).unwrap(), 1);
    let vs: Vec<_> = stale.texts().map(unit).collect();
    assert_eq!(store.embed_write(stale, 2, &vs).unwrap(), 0);
    assert_eq!(store.load_vectors("m@1/2", 2).unwrap().len(), 3);
    // Fewer results than texts is refused before anything is written.
    store
        .write(|w| w.apply(s, vec![text("u3", "third prompt")]))
        .unwrap();
    let w = store.embed_take("m@1/2", 100).unwrap();
    assert!(matches!(
        store.embed_write(w, 2, &[]),
        Err(memtrail_runtime::Error::Invalid(m)) if m == "1 texts to embed but 0 results"
    ));
    assert_eq!(store.embed_backlog("m@1/2").unwrap(), 1);
}
