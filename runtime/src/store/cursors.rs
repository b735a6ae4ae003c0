//! Ingest cursors: where each transcript was read up to (`sources`).

use super::Db;
use super::{Store, Writer};
use crate::records::Enrich;
use crate::{Error, Result};
use memtrail_adapters::Agent;
use rusqlite::{OptionalExtension, params};

/// The cursor of one transcript file, as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cursor {
    pub session_id: Option<i64>,
    /// Byte offset just past the last complete line ingested.
    pub offset: u64,
    /// File size, identity and modification time at the last ingest.
    pub size: u64,
    pub dev: Option<u64>,
    pub ino: Option<u64>,
    pub mtime_ns: Option<i64>,
    /// Length of the file prefix that `head_hash` covers (min(4096, offset)).
    pub head_len: u64,
    /// blake3 of the first `head_len` bytes, hex.
    pub head_hash: Option<String>,
    /// The reader's state at `offset` (see `LineReader::save_state`), as JSON.
    pub reader_state: Option<serde_json::Value>,
    /// Length of the window just before `offset` that `tail_hash` covers (min(4096, offset)).
    pub tail_len: u64,
    /// blake3 of the `tail_len` bytes before `offset`, hex: a file truncated and regrown past
    /// the first bytes is detected here.
    pub tail_hash: Option<String>,
}

impl Store {
    /// The stored cursor for a transcript path.
    pub fn cursor(&self, path: &str) -> Result<Option<Cursor>> {
        self
            .conn
            .prepare_cached(
                "SELECT session_id, offset, size, dev, ino, mtime_ns, head_len, head_hash, reader_state,
                        tail_len, tail_hash
                 FROM sources WHERE path = ?1",
            ).db()?
            .query_row(
                [path],
                |r| {
                    Ok(Cursor {
                        session_id: r.get(0)?,
                        offset: r.get::<_, i64>(1)? as u64,
                        size: r.get::<_, i64>(2)? as u64,
                        dev: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                        ino: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
                        mtime_ns: r.get(5)?,
                        head_len: r.get::<_, i64>(6)? as u64,
                        head_hash: r.get(7)?,
                        reader_state: r
                            .get::<_, Option<String>>(8)?
                            .and_then(|t| serde_json::from_str(&t).ok()),
                        tail_len: r.get::<_, i64>(9)? as u64,
                        tail_hash: r.get(10)?,
                    })
                },
            )
            .optional().db()
    }

    /// The transcripts' cursors without a skip marker that may end in an unfinished line, by
    /// path: (path, agent, byte offset). Those whose last ingest left bytes after the cursor
    /// (`size > offset`: a last line without its `\n`, or a read stopped by a hook's budget),
    /// and those whose file was modified at or after `recent_ms` (ms since the Unix epoch) when
    /// last ingested (or whose time is unknown): a file being written may have grown since. The
    /// others were read to their end and had been at rest since before `recent_ms`; an agent
    /// that writes to such a file again fires its hooks, which read it.
    pub fn tail_candidates(&self, recent_ms: i64) -> Result<Vec<(String, String, i64)>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT path, agent, offset FROM sources
                 WHERE (size > offset OR mtime_ns IS NULL OR mtime_ns >= ?1 * 1000000)
                   AND (NOT (json_valid(reader_state)
                             AND json_extract(reader_state, '$.memtrail_skip') IS NOT NULL)
                        OR reader_state IS NULL)
                 ORDER BY path",
            )
            .db()?;
        let rows = stmt
            .query_map([recent_ms], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?;
        Ok(rows)
    }

    /// Every transcript with a cursor (every file an ingest has read), by its path as stored
    /// (`Path::to_string_lossy`): what the last ingest read of it ([`ReadFile`]). One read of
    /// `sources`: `status` opens only the transcripts not in it to prove they can be read, and
    /// its retention check stats only those this cannot clear.
    pub fn read_files(&self) -> Result<std::collections::HashMap<String, ReadFile>> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, offset, size, mtime_ns, ingested_at FROM sources")
            .db()?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    ReadFile {
                        offset: r.get::<_, i64>(1)?.max(0) as u64,
                        size: r.get::<_, i64>(2)?.max(0) as u64,
                        mtime_ns: r.get(3)?,
                        read_at_ms: r.get(4)?,
                    },
                ))
            })
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?;
        Ok(rows)
    }

    /// [`Store::read_files`] and [`Store::tail_candidates`]`(recent_ms)` from one read of
    /// `sources` (`status`: the table holds each cursor's reader state, ~7 MB for the 1 GB
    /// bench store, and was read twice per status).
    #[allow(clippy::type_complexity)]
    pub fn read_files_and_tail_candidates(
        &self,
        recent_ms: i64,
    ) -> Result<(
        std::collections::HashMap<String, ReadFile>,
        Vec<(String, String, i64)>,
    )> {
        // The agent only for the tail candidates (the same condition as `tail_candidates`).
        let mut stmt = self
            .conn
            .prepare(
                "SELECT path, offset, size, mtime_ns, ingested_at,
                        CASE WHEN (size > offset OR mtime_ns IS NULL OR mtime_ns >= ?1 * 1000000)
                              AND (NOT (json_valid(reader_state)
                                        AND json_extract(reader_state, '$.memtrail_skip') IS NOT NULL)
                                   OR reader_state IS NULL)
                             THEN agent END
                 FROM sources",
            )
            .db()?;
        let mut files = std::collections::HashMap::new();
        let mut tails = Vec::new();
        let mut rows = stmt.query([recent_ms]).db()?;
        while let Some(r) = rows.next().db()? {
            let path: String = r.get(0).db()?;
            let offset: i64 = r.get(1).db()?;
            if let Some(agent) = r.get::<_, Option<String>>(5).db()? {
                tails.push((path.clone(), agent, offset));
            }
            files.insert(
                path,
                ReadFile {
                    offset: offset.max(0) as u64,
                    size: r.get::<_, i64>(2).db()?.max(0) as u64,
                    mtime_ns: r.get(3).db()?,
                    read_at_ms: r.get(4).db()?,
                },
            );
        }
        tails.sort();
        Ok((files, tails))
    }

    /// Every transcript cursor's position and file identity, by path (one query; an import
    /// compares them with the files' metadata to pass over unchanged files without opening
    /// them: see [`crate::ingest::unchanged_since`]).
    pub fn cursor_stats(&self) -> Result<std::collections::HashMap<String, CursorStat>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT path, offset, dev, ino, mtime_ns,
                    COALESCE(reader_state LIKE '%\"memtrail_skip\"%', 0)
             FROM sources",
            )
            .db()?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    CursorStat {
                        offset: r.get::<_, i64>(1)? as u64,
                        dev: r.get::<_, Option<i64>>(2)?.map(|v| v as u64),
                        ino: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                        mtime_ns: r.get(4)?,
                        marked: r.get(5)?,
                    },
                ))
            })
            .db()?;
        rows.collect::<rusqlite::Result<_>>().db()
    }
}

impl Writer<'_> {
    /// Store the cursor of a transcript file and add to its line counters. The reader state is
    /// transcript content (a VS Code tool result held until the message requesting it comes,
    /// a tool start's input): it is redacted like a record, by `enrich`
    /// ([`Enrich::redact_json`]), before it is written.
    pub fn save_cursor<E: Enrich>(
        &self,
        path: &str,
        agent: Agent,
        c: &Cursor,
        stats: &memtrail_adapters::ParseStats,
        now_ms: i64,
        enrich: &E,
    ) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO sources (path, agent, session_id, offset, size, dev, ino, mtime_ns, head_len,
                                      head_hash, lines, skipped, malformed, unknown, ingested_at, reader_state,
                                      tail_len, tail_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
                 ON CONFLICT (path) DO UPDATE SET agent = excluded.agent, session_id = excluded.session_id,
                    offset = excluded.offset, size = excluded.size, dev = excluded.dev, ino = excluded.ino,
                    mtime_ns = excluded.mtime_ns, head_len = excluded.head_len, head_hash = excluded.head_hash,
                    lines = lines + excluded.lines, skipped = skipped + excluded.skipped,
                    malformed = malformed + excluded.malformed, unknown = unknown + excluded.unknown,
                    ingested_at = excluded.ingested_at, reader_state = excluded.reader_state,
                    tail_len = excluded.tail_len, tail_hash = excluded.tail_hash",
            ).db()?
            .execute(params![
                path,
                agent.as_str(),
                c.session_id,
                c.offset as i64,
                c.size as i64,
                c.dev.map(|v| v as i64),
                c.ino.map(|v| v as i64),
                c.mtime_ns,
                c.head_len as i64,
                c.head_hash,
                stats.lines as i64,
                stats.skipped_known as i64,
                stats.malformed as i64,
                stats.skipped_unknown as i64,
                now_ms,
                c.reader_state.as_ref().map(|v| {
                    let mut v = v.clone();
                    enrich.redact_json(&mut v);
                    v.to_string()
                }),
                c.tail_len as i64,
                c.tail_hash,
            ]).db()?;
        Ok(())
    }

    /// The stored cursor's [`CursorMark`] for `path`, read inside this transaction: an ingest
    /// step compares it with the cursor it started from, and stands down when another process
    /// moved it, or marked it (a `sessions delete` that ran while the step waited for the
    /// write lock), meanwhile (see [`Error::Superseded`]).
    pub fn cursor_mark(&self, path: &str) -> Result<Option<CursorMark>> {
        self.tx
            .prepare_cached(
                "SELECT offset, head_hash, CASE WHEN json_valid(reader_state)
                     THEN json_extract(reader_state, '$.memtrail_skip') IS NOT NULL ELSE 0 END
                 FROM sources WHERE path = ?1",
            )
            .db()?
            .query_row([path], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?))
            })
            .optional()
            .db()
    }

    /// `Err(`[`Error::Superseded`]`)` unless the stored cursor of `path` is still `expected`
    /// (offset, head hash and skip marker; `None`: no cursor yet).
    pub fn expect_cursor(&self, path: &str, expected: &Option<CursorMark>) -> Result<()> {
        if &self.cursor_mark(path)? == expected {
            Ok(())
        } else {
            Err(Error::Superseded)
        }
    }

    /// Reset the line counters of a source (its file is being re-read from the start).
    pub fn reset_source_counters(&self, path: &str) -> Result<()> {
        self.tx.execute(
            "UPDATE sources SET lines = 0, skipped = 0, malformed = 0, unknown = 0 WHERE path = ?1",
            [path],
        ).db()?;
        Ok(())
    }
}

/// A stored cursor as an ingest step checks it before it commits: its byte offset, its head
/// hash, and whether it holds a skip marker (see [`crate::privacy::SkipReason`]).
pub type CursorMark = (u64, Option<String>, bool);

impl Cursor {
    /// This cursor's [`CursorMark`].
    pub fn mark(&self) -> CursorMark {
        // Any top-level `memtrail_skip` key, as `Writer::cursor_mark` tests it in SQL.
        let marked = self
            .reader_state
            .as_ref()
            .is_some_and(|s| s.get("memtrail_skip").is_some_and(|v| !v.is_null()));
        (self.offset, self.head_hash.clone(), marked)
    }
}

/// What [`Store::cursor_stats`] gives per transcript: the cursor's byte offset, and the file's
/// device, inode and modification time (ns) when it was last read; `marked`: the cursor holds
/// a skip marker (excluded project, deleted session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorStat {
    pub offset: u64,
    pub dev: Option<u64>,
    pub ino: Option<u64>,
    pub mtime_ns: Option<i64>,
    pub marked: bool,
}

/// What the last ingest read of a transcript ([`Store::read_files`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadFile {
    /// Bytes read (the cursor's offset).
    pub offset: u64,
    /// The file's size then.
    pub size: u64,
    /// Its modification time then (ns since the Unix epoch; `None` when unknown).
    pub mtime_ns: Option<i64>,
    /// When that ingest stored the cursor (ms since the Unix epoch; `ingested_at`), shortly
    /// after it read the file.
    pub read_at_ms: Option<i64>,
}

#[cfg(test)]
mod tests {
    use crate::ingest::{TAIL_RECENT_MS, ingest_file, pending_tails};
    use crate::store::Store;
    use memtrail_adapters::Agent;

    /// Three copies of a Claude transcript: `old` last modified two days before it was read
    /// whole, `recent` modified just before it was read whole, `cut` modified two days before it
    /// was read up to a last line without its `\n`. Only `recent` and `cut`
    /// are candidates; once `old` and `recent` also end in an unfinished line, `pending_tails`
    /// lists `recent` and `cut` (the bytes after their cursors), not `old`.
    #[test]
    fn tail_candidates_are_the_recent_and_the_unfinished() {
        let d = tempfile::tempdir().unwrap();
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/claude/projects/-home-user-demo/3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83.jsonl");
        let text = std::fs::read_to_string(fixture).unwrap();
        let mut s = Store::open(&d.path().join("a.db")).unwrap();
        let half = r#"{"type":"user","message":{"#;
        let path = |n: &str| d.path().join(format!("{n}.jsonl"));
        // Each copy its own session: the session id is replaced.
        for (i, name) in ["old", "recent", "cut"].iter().enumerate() {
            let own = text.replace(
                "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83",
                &format!("{i}f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e8{i}"),
            );
            let body = if *name == "cut" {
                format!("{own}{half}")
            } else {
                own
            };
            std::fs::write(path(name), body).unwrap();
            ingest_file(&mut s, Agent::Claude, &path(name), None).unwrap();
        }
        let two_days_ago_ns = (crate::now_ms() - 2 * 24 * 3600 * 1000) * 1_000_000;
        s.conn
            .execute(
                "UPDATE sources SET mtime_ns = ?1 WHERE path IN (?2, ?3)",
                rusqlite::params![
                    two_days_ago_ns,
                    path("old").display().to_string(),
                    path("cut").display().to_string()
                ],
            )
            .unwrap();
        let recent = crate::now_ms() - TAIL_RECENT_MS;
        let names = |rows: Vec<(String, String, i64)>| -> Vec<String> {
            rows.into_iter()
                .map(|(p, a, _)| {
                    assert_eq!(a, "claude");
                    std::path::Path::new(&p)
                        .file_stem()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
        };
        assert_eq!(names(s.tail_candidates(recent).unwrap()), ["cut", "recent"]);
        // `status`'s one read of the cursors gives both answers.
        let (files, tails) = s.read_files_and_tail_candidates(recent).unwrap();
        assert_eq!(files, s.read_files().unwrap());
        assert_eq!(files.len(), 3);
        assert!(files.values().all(|f| f.read_at_ms.is_some()));
        assert_eq!(tails, s.tail_candidates(recent).unwrap());
        for name in ["old", "recent"] {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(path(name))
                .unwrap();
            std::io::Write::write_all(&mut f, half.as_bytes()).unwrap();
        }
        let tails: Vec<(String, u64)> = pending_tails(&s)
            .unwrap()
            .into_iter()
            .map(|t| {
                let stem = std::path::Path::new(&t.path)
                    .file_stem()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                (stem, t.bytes)
            })
            .collect();
        let n = half.len() as u64;
        assert_eq!(tails, [("cut".to_string(), n), ("recent".to_string(), n)]);
    }
}
