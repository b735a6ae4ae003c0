-- 1: the initial schema.
    CREATE TABLE sessions (
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
        UNIQUE (agent, external_id)
    );
    CREATE INDEX sessions_by_updated ON sessions (updated_at DESC);
    CREATE INDEX sessions_by_agent_updated ON sessions (agent, updated_at DESC);
    CREATE INDEX sessions_by_project_updated ON sessions (project_dir, updated_at DESC);
    CREATE INDEX sessions_by_parent ON sessions (agent, parent_external_id);

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        ext_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        kind TEXT NOT NULL,
        ts INTEGER,
        model TEXT,
        body TEXT NOT NULL,
        tools TEXT NOT NULL,
        cjk TEXT,
        parts TEXT NOT NULL,
        UNIQUE (session_id, ext_id)
    );
    CREATE INDEX messages_by_session_seq ON messages (session_id, seq);
    CREATE INDEX messages_by_ts ON messages (ts);

    CREATE TABLE tool_calls (
        session_id INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        tool TEXT NOT NULL,
        is_error INTEGER NOT NULL DEFAULT 0,
        has_output INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (session_id, call_id)
    ) WITHOUT ROWID;
    CREATE INDEX tool_calls_by_message ON tool_calls (message_id);

    CREATE VIRTUAL TABLE messages_fts USING fts5 (
        body, tools, cjk,
        content = 'messages', content_rowid = 'id',
        tokenize = 'porter unicode61'
    );
    CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, body, tools, cjk)
            VALUES (new.id, new.body, new.tools, new.cjk);
    END;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            VALUES ('delete', old.id, old.body, old.tools, old.cjk);
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF body, tools, cjk ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            VALUES ('delete', old.id, old.body, old.tools, old.cjk);
        INSERT INTO messages_fts (rowid, body, tools, cjk)
            VALUES (new.id, new.body, new.tools, new.cjk);
    END;

    CREATE TABLE sources (
        path TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        session_id INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
        offset INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL DEFAULT 0,
        dev INTEGER,
        ino INTEGER,
        mtime_ns INTEGER,
        head_len INTEGER NOT NULL DEFAULT 0,
        head_hash TEXT,
        lines INTEGER NOT NULL DEFAULT 0,
        skipped INTEGER NOT NULL DEFAULT 0,
        malformed INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        ingested_at INTEGER
    );

    CREATE TABLE hook_runs (
        agent TEXT NOT NULL,
        event TEXT NOT NULL,
        at INTEGER NOT NULL,
        duration_us INTEGER NOT NULL,
        session TEXT,
        messages INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        PRIMARY KEY (agent, event)
    ) WITHOUT ROWID;
