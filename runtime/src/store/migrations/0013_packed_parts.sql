-- 13: `messages.parts` compressed (zstd, `store::packed`) and the tool calls' index text no
-- longer stored twice. Before this batch, `schema.rs` renamed `messages.tools` to `tools_text`
-- (so that a memtrail from before, still running, fails on it instead of indexing a new row
-- without its tool text); after it, it rewrites two declarations SQLite has no ALTER for
-- (`tools_text` may be NULL; the index's content is the view below), neither of which changes
-- how a row is kept on disk. `tools_text` NULL means "render it from the parts", which
-- `memtrail_tools(tools_text, parts)` does; rows written before keep their text, which is what
-- the index holds of them. The full-text index reads its content through the view
-- `messages_text`, and a message leaves the index with the text `memtrail_tools` gives of its
-- old row. A change of `parts` now changes what is indexed and embedded, so it queues the
-- message again for both.
    DROP VIEW IF EXISTS messages_text;
    CREATE VIEW messages_text AS
        SELECT id, body, memtrail_tools(tools_text, parts) AS tools, cjk FROM messages;
    DROP TRIGGER IF EXISTS messages_ad;
    DROP TRIGGER IF EXISTS messages_au;
    DROP TRIGGER IF EXISTS messages_au_embed;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, memtrail_tools(old.tools_text, old.parts), old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        DELETE FROM fts_pending WHERE id = old.id;
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF body, tools_text, cjk, parts ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, memtrail_tools(old.tools_text, old.parts), old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
    END;
    CREATE TRIGGER messages_au_embed AFTER UPDATE OF body, tools_text, parts ON messages BEGIN
        DELETE FROM message_vectors WHERE message_id = new.id;
        INSERT OR IGNORE INTO embed_pending (id) SELECT new.id
            WHERE new.id <= (SELECT done_through FROM embed_state);
    END;
