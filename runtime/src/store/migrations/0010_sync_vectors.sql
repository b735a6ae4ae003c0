-- 10: vectors travel with sync (docs/sync.md, "Vectors"). A message of this machine embedded
-- after it was queued or pushed queues its vectors for the next push: outbox item
-- `-2 - message id` (0 is the session row, -1 its message set, a positive item a message).
-- Embedding runs after import and in the MCP server, usually after the message was pushed,
-- so the message itself is not sent again; a message entry carries its vectors too. Like the
-- message triggers, it fires only once sync is enabled and only for this machine's sessions.
    DROP TRIGGER IF EXISTS sync_vectors_ai;
    CREATE TRIGGER sync_vectors_ai AFTER INSERT ON message_vectors
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND EXISTS (SELECT 1 FROM messages m JOIN sessions s ON s.id = m.session_id
                 WHERE m.id = new.message_id AND s.origin = '')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item)
            SELECT session_id, -2 - new.message_id FROM messages WHERE id = new.message_id;
    END;
