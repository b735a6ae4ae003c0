-- 6: sync to PostgreSQL (docs/sync.md). `sessions` gets `origin` ('' for this machine's
-- sessions, else the id of the machine a pulled session comes from) and is unique on (agent,
-- external_id, origin): the table is rebuilt (SQLite's twelve-step ALTER procedure; the row ids
-- are kept, and `Store::migrate` runs it with foreign keys off, since dropping the old table
-- with them on would delete every message). Like migration 4, it can run again over its own
-- tables and triggers (tests make an older store out of a new one).
    DROP TRIGGER IF EXISTS sync_messages_ai;
    DROP TRIGGER IF EXISTS sync_messages_au;
    DROP TRIGGER IF EXISTS sync_messages_ad;
    DROP TRIGGER IF EXISTS sync_snapshots_ai;
    DROP TRIGGER IF EXISTS sync_snapshots_au;
    DROP TRIGGER IF EXISTS sync_snapshots_ad;
    CREATE TABLE sessions_v6 (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        external_id TEXT NOT NULL,
        parent_external_id TEXT,
        project_dir TEXT,
        title TEXT,
        model TEXT,
        git_branch TEXT,
        agent_version TEXT,
        started_at INTEGER,
        updated_at INTEGER,
        message_count INTEGER NOT NULL DEFAULT 0,
        origin TEXT NOT NULL DEFAULT '',
        UNIQUE (agent, external_id, origin)
    );
    INSERT INTO sessions_v6 (id, agent, external_id, parent_external_id, project_dir, title,
                             model, git_branch, agent_version, started_at, updated_at,
                             message_count)
        SELECT id, agent, external_id, parent_external_id, project_dir, title, model,
               git_branch, agent_version, started_at, updated_at, message_count
        FROM sessions;
    DROP TABLE sessions;
    ALTER TABLE sessions_v6 RENAME TO sessions;
    CREATE INDEX sessions_by_updated ON sessions (updated_at DESC);
    CREATE INDEX sessions_by_agent_updated ON sessions (agent, updated_at DESC);
    CREATE INDEX sessions_by_project_updated ON sessions (project_dir, updated_at DESC);
    CREATE INDEX sessions_by_parent ON sessions (agent, parent_external_id);

    -- What waits to be pushed: `item` is a message row id, 0 the session row and its
    -- snapshots, -1 the session's message set (a message was deleted). `INSERT OR REPLACE`
    -- gives a changed entry a new `seq`, so a push acknowledges only what it read.
    CREATE TABLE IF NOT EXISTS sync_outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id INTEGER NOT NULL,
        item INTEGER NOT NULL,
        UNIQUE (session_id, item)
    );
    -- Sessions deleted (of any origin), pushed before anything else.
    CREATE TABLE IF NOT EXISTS sync_tombstones (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        origin TEXT NOT NULL,
        agent TEXT NOT NULL,
        external_id TEXT NOT NULL,
        deleted_at INTEGER NOT NULL
    );
    -- `enabled` (its presence turns the triggers below on), `pull:<machine>` (the PostgreSQL
    -- revision pulled up to), `last_push_at`, `last_pull_at`, `last_error`.
    CREATE TABLE IF NOT EXISTS sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)
        WITHOUT ROWID;
    -- The labels (hostnames) of the machines pulled from.
    CREATE TABLE IF NOT EXISTS machines (id TEXT PRIMARY KEY, label TEXT NOT NULL)
        WITHOUT ROWID;

    -- Tool calls and events change only with their message row (the writer rewrites the row
    -- whenever it rewrites them: a merge, a replace, a late tool result, a rescan), so the
    -- message triggers cover them.
    CREATE TRIGGER sync_messages_ai AFTER INSERT ON messages
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id AND origin = '')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (new.session_id, new.id);
    END;
    CREATE TRIGGER sync_messages_au AFTER UPDATE ON messages
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id AND origin = '')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (new.session_id, new.id);
    END;
    CREATE TRIGGER sync_messages_ad AFTER DELETE ON messages
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND EXISTS (SELECT 1 FROM sessions WHERE id = old.session_id AND origin = '')
    BEGIN
        DELETE FROM sync_outbox WHERE session_id = old.session_id AND item = old.id;
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (old.session_id, -1);
    END;
    CREATE TRIGGER sync_sessions_ai AFTER INSERT ON sessions
    WHEN new.origin = '' AND EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (new.id, 0);
    END;
    -- Every hook folds the session's metadata into its row again: only a change is queued.
    CREATE TRIGGER sync_sessions_au AFTER UPDATE ON sessions
    WHEN new.origin = '' AND EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND (old.parent_external_id IS NOT new.parent_external_id
          OR old.project_dir IS NOT new.project_dir OR old.title IS NOT new.title
          OR old.model IS NOT new.model OR old.git_branch IS NOT new.git_branch
          OR old.agent_version IS NOT new.agent_version
          OR old.started_at IS NOT new.started_at OR old.updated_at IS NOT new.updated_at
          OR old.message_count IS NOT new.message_count OR old.agent IS NOT new.agent
          OR old.external_id IS NOT new.external_id OR old.origin IS NOT new.origin)
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (new.id, 0);
    END;
    -- A deleted session of any origin is deleted everywhere (docs/sync.md).
    CREATE TRIGGER sync_sessions_ad AFTER DELETE ON sessions
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
    BEGIN
        DELETE FROM sync_outbox WHERE session_id = old.id;
        INSERT INTO sync_tombstones (origin, agent, external_id, deleted_at)
            VALUES (old.origin, old.agent, old.external_id,
                    CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER));
    END;
    CREATE TRIGGER sync_snapshots_ai AFTER INSERT ON snapshots
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id AND origin = '')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (new.session_id, 0);
    END;
    CREATE TRIGGER sync_snapshots_au AFTER UPDATE ON snapshots
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id AND origin = '')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (new.session_id, 0);
    END;
    CREATE TRIGGER sync_snapshots_ad AFTER DELETE ON snapshots
    WHEN EXISTS (SELECT 1 FROM sync_state WHERE key = 'enabled')
     AND EXISTS (SELECT 1 FROM sessions WHERE id = old.session_id AND origin = '')
    BEGIN
        INSERT OR REPLACE INTO sync_outbox (session_id, item) VALUES (old.session_id, 0);
    END;
