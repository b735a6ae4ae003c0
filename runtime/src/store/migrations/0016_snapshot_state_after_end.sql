-- 16: a deleted or updated event drops its session's running snapshot state only when it is at
-- or before the last message the state covers (`last_seq`), as an inserted one does (0015).
-- The events after it are not in the state: the next snapshot reads them anyway. The hooks
-- keep a state up to the message before a session's last (`Writer::advance_snapshot_state`),
-- and a late tool result for that last message extracts its events again (a delete and an
-- insert), which dropped the state on every such turn.
    DROP TRIGGER IF EXISTS events_snapshot_state_ad;
    DROP TRIGGER IF EXISTS events_snapshot_state_au;
    CREATE TRIGGER events_snapshot_state_ad AFTER DELETE ON events
    WHEN old.seq <= (SELECT last_seq FROM snapshot_states WHERE session_id = old.session_id)
    BEGIN
        DELETE FROM snapshot_states WHERE session_id = old.session_id;
    END;
    CREATE TRIGGER events_snapshot_state_au AFTER UPDATE ON events BEGIN
        DELETE FROM snapshot_states
        WHERE (session_id = old.session_id AND old.seq <= last_seq)
           OR (session_id = new.session_id AND new.seq <= last_seq);
    END;
