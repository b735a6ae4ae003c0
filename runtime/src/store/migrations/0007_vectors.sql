-- 7: vectors for search by meaning (issue 14). `message_vectors` holds, per message, one
-- vector per chunk of its text, int8 with a scale (value ≈ scale × byte); `embed_state` names
-- the model that made them (`name@version/dim`) and how far the backlog is done: every message
-- with an id above `done_through`, and every message in `embed_pending` (rewritten since it
-- was embedded), waits to be embedded. Nothing is added to the hook's insert: a new message is
-- queued by its id alone. A changed model clears the vectors (`Store::embed_batch`).
    CREATE TABLE IF NOT EXISTS embed_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        model TEXT NOT NULL,
        done_through INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS message_vectors (
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        chunk INTEGER NOT NULL,
        scale REAL NOT NULL,
        vec BLOB NOT NULL,
        PRIMARY KEY (message_id, chunk)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS embed_pending (id INTEGER PRIMARY KEY);
    DROP TRIGGER IF EXISTS messages_au_embed;
    DROP TRIGGER IF EXISTS messages_ad_embed;
    CREATE TRIGGER messages_au_embed AFTER UPDATE OF body, tools ON messages BEGIN
        DELETE FROM message_vectors WHERE message_id = new.id;
        INSERT OR IGNORE INTO embed_pending (id) SELECT new.id
            WHERE new.id <= (SELECT done_through FROM embed_state);
    END;
    -- A deleted message's vectors go with it (foreign key). When it was the newest message,
    -- its id can be given again to the next one: the backlog is moved back to cover it.
    CREATE TRIGGER messages_ad_embed AFTER DELETE ON messages
        WHEN old.id > coalesce((SELECT max(id) FROM messages), 0) BEGIN
        DELETE FROM embed_pending WHERE id = old.id;
        UPDATE embed_state SET done_through = min(done_through, coalesce((SELECT max(id) FROM messages), 0));
    END;
