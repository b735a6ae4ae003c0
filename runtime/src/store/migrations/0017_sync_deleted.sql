-- 17: the deletions made on this machine, kept to be sent again to a database that is new to it
-- (`Store::sync_database`): a database restored from a backup taken before a deletion holds
-- the deleted session again, and the machines would pull it back. An entry is one of this
-- machine's tombstones once PostgreSQL acknowledged it (`Store::ack_push`); `origin` as in
-- `sync_tombstones` ('' for this machine's own sessions). Deletions pulled are not kept: each
-- machine sends its own again, so PostgreSQL records each as its deleter's. A session stored
-- again under the same key (captured again here, or pulled again) drops its entry: it exists
-- again.
    CREATE TABLE IF NOT EXISTS sync_deleted (
        origin TEXT NOT NULL,
        agent TEXT NOT NULL,
        external_id TEXT NOT NULL,
        deleted_at INTEGER NOT NULL,
        PRIMARY KEY (origin, agent, external_id)
    ) WITHOUT ROWID;
    CREATE TRIGGER IF NOT EXISTS sync_deleted_sessions_ai AFTER INSERT ON sessions BEGIN
        DELETE FROM sync_deleted
        WHERE origin = new.origin AND agent = new.agent AND external_id = new.external_id;
    END;
