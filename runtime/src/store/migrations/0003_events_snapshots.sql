-- 3: events (per message, deleted with it) and snapshots (with their consumption). The
-- events of messages stored before are backfilled right after this batch (see
-- `Store::migrate`).
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        category TEXT NOT NULL,
        action TEXT NOT NULL,
        priority INTEGER NOT NULL,
        subject TEXT NOT NULL,
        detail TEXT,
        call_id TEXT,
        tool TEXT,
        ts INTEGER
    );
    CREATE INDEX events_by_session_seq ON events (session_id, seq, id);
    CREATE INDEX events_by_session_category ON events (session_id, category);
    CREATE INDEX events_by_message ON events (message_id);

    CREATE TABLE snapshots (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        built_at INTEGER NOT NULL,
        trigger TEXT NOT NULL,
        budget INTEGER NOT NULL,
        events INTEGER NOT NULL,
        text TEXT NOT NULL,
        consumed_at INTEGER,
        consumed_by TEXT
    );
    CREATE INDEX snapshots_by_session ON snapshots (session_id, built_at DESC, id DESC);
