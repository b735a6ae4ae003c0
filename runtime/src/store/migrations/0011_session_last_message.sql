-- 11: each session's largest message id, an upper bound kept by triggers (it never goes down:
-- a deleted message leaves it as it was). A search filtered to a scope too large to list walks
-- the matches newest first checking each one's session (`queries::session_scope`); it starts
-- the walk at the scope's largest message id instead of the store's, so a scope among the
-- oldest messages (the first agent a large import read) is not reached through every newer
-- match (`--agent claude` on the 1 GB bench store: 105 ms). NULL: the session has no message.
    ALTER TABLE sessions ADD COLUMN last_message_id INTEGER;
    UPDATE sessions SET last_message_id = (SELECT max(m.id) FROM messages m WHERE m.session_id = sessions.id);
    CREATE TRIGGER messages_session_last_ai AFTER INSERT ON messages BEGIN
        UPDATE sessions SET last_message_id = new.id
        WHERE id = new.session_id AND (last_message_id IS NULL OR last_message_id < new.id);
    END;
    CREATE TRIGGER messages_session_last_au AFTER UPDATE OF session_id, id ON messages BEGIN
        UPDATE sessions SET last_message_id = new.id
        WHERE id = new.session_id AND (last_message_id IS NULL OR last_message_id < new.id);
    END;
