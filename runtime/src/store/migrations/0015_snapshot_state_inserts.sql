-- 15: an event inserted into a session at or before the last message its running snapshot
-- state covers (`last_seq`) drops the state, as a deleted or updated event does (0012). A
-- snapshot then trusts a state that exists, instead of counting the session's events to find
-- such an insert (`store::snapshot_state`; the count was ~0.45 ms of a 10,000-event session's
-- 1.5 ms snapshot). The test on each insert is one lookup by the session's id in a table of a
-- row per compacted session.
    CREATE TRIGGER events_snapshot_state_ai AFTER INSERT ON events
    WHEN new.seq <= (SELECT last_seq FROM snapshot_states WHERE session_id = new.session_id)
    BEGIN
        DELETE FROM snapshot_states WHERE session_id = new.session_id;
    END;
