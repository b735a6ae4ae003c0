-- 19: `events_by_session_category` dropped. No statement reads it: a snapshot, a handoff and a
-- pull read a session's events by `events_by_session_seq` (`session_id, seq, id`), a rewrite or
-- a delete of a message by `events_by_message`, and a session's delete cascades by the first;
-- the one query on `category` (the file edits of the activity figures, once, in migration 8)
-- reads the whole table. The index cost each event an insert and a fresh import of the 1 GB
-- bench corpus 11.0 MB (docs/benchmarks.md, "An index no statement reads"). An older memtrail
-- still running is unaffected: its statements are prepared again and use the same indexes.
    DROP INDEX IF EXISTS events_by_session_category;
