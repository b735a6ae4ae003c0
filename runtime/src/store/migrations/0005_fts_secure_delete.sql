-- 5: FTS5 `secure-delete` (SQLite 3.44+, kept in the index's config): a 'delete' (a
-- deleted session, a message that a later hook rewrote or `redact --rescan` redacted)
-- removes the old terms from the segments at once, instead of adding a delete marker beside
-- them until the segments merge, so a deleted word is not left in the file. Entries deleted
-- before this migration stay until the next merge (`sessions delete`, `purge` and
-- `redact --rescan` merge the whole index).
    INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
