-- 12: a running state of each session's snapshot (`snapshot::state`): what the snapshot needs of
-- the session's first `rows` events (the last of them at (`last_seq`, `last_id`)), so that a
-- snapshot reads only the events appended since (`store::snapshot_state`). It holds fields of
-- stored events (redacted as stored) and counters. Valid only while the session's events were
-- only appended: a deleted or updated event drops it (the triggers); an event inserted before
-- its end is found by the count of the session's events. Made again when a snapshot is built
-- in a write (the hooks at compaction); none is made here.
    CREATE TABLE snapshot_states (
        session_id INTEGER PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        rows INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        last_id INTEGER NOT NULL,
        state BLOB NOT NULL
    );
    CREATE TRIGGER events_snapshot_state_ad AFTER DELETE ON events BEGIN
        DELETE FROM snapshot_states WHERE session_id = old.session_id;
    END;
    CREATE TRIGGER events_snapshot_state_au AFTER UPDATE ON events BEGIN
        DELETE FROM snapshot_states WHERE session_id IN (old.session_id, new.session_id);
    END;
