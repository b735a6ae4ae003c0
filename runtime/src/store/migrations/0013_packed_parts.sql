-- 13: `messages.parts` compressed (zstd, `store::packed`) and `messages.tools` no longer
-- stored: NULL means "render it from the parts", which `memtrail_tools(tools, parts)` does
-- (rows written before keep their text, which is what the index holds of them). The full-text
-- index reads its content through the view `messages_text`, and a message leaves the index
-- with the text `memtrail_tools` gives of its old row. A change of `parts` now changes what is
-- indexed, so it queues the message again. The declarations of `messages` (`tools` may be
-- NULL) and `messages_fts` (its content is the view) are rewritten by `schema.rs` after this
-- batch: SQLite has no ALTER for either, and neither changes how a row is kept on disk.
    DROP VIEW IF EXISTS messages_text;
    CREATE VIEW messages_text AS
        SELECT id, body, memtrail_tools(tools, parts) AS tools, cjk FROM messages;
    DROP TRIGGER IF EXISTS messages_ad;
    DROP TRIGGER IF EXISTS messages_au;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, memtrail_tools(old.tools, old.parts), old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        DELETE FROM fts_pending WHERE id = old.id;
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF body, tools, cjk, parts ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, memtrail_tools(old.tools, old.parts), old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
    END;
