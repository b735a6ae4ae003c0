-- 4: the full-text index is brought up to date after the write instead of inside it: a
-- written or changed message is queued in `fts_pending`, and `index_pending` indexes the
-- queue (searches, imports and the MCP server do; see `Store::catch_up_index`). A message
-- leaves the index (FTS5 'delete' with its old values) only if it was indexed, that is,
-- not queued.
    CREATE TABLE IF NOT EXISTS fts_pending (id INTEGER PRIMARY KEY);
    DROP TRIGGER IF EXISTS messages_ai;
    DROP TRIGGER IF EXISTS messages_ad;
    DROP TRIGGER IF EXISTS messages_au;
    CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
        INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
    END;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, old.tools, old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        DELETE FROM fts_pending WHERE id = old.id;
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF body, tools, cjk ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, old.tools, old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
    END;
    -- FTS5 flushes its in-memory terms to a new segment every 1 MiB by default; a catch-up of
    -- thousands of messages then makes many small segments, merged again and again.
    INSERT INTO messages_fts (messages_fts, rank) VALUES ('hashsize', 16777216);
