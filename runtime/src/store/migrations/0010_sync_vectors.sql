-- 10: vectors travel with sync (docs/sync.md, "Vectors"). A message of this machine embedded
-- after it was queued or pushed queues its vectors for the next push: outbox item
-- `-2 - message id` (0 is the session row, -1 its message set, a positive item a message).
-- Embedding runs after import and in the MCP server, usually after the message was pushed,
-- so the message itself is not sent again; a message entry carries its vectors too. Like the
-- message triggers, it fires only once sync is enabled. It does not read `sessions` (migration
-- 6 rebuilds that table, and tests run it again over a newer store): a pulled session's entry
-- is dropped by the push without being sent, as any entry of a pulled session is.
    DROP TRIGGER IF EXISTS sync_vectors_ai;
    CREATE TRIGGER sync_vectors_ai AFTER INSERT ON message_vectors
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item)
            SELECT session_id, -2 - new.message_id FROM messages WHERE id = new.message_id;
    END;
