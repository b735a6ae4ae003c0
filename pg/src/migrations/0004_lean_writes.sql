-- 4: cheaper writes (docs/postgres.md, "Writes"), and session lists read from an index. Measured on a first sync of the 1 GB bench
-- store (701,599 messages, 456,486 tool calls, 546,170 events): the foreign keys' per-row
-- checks were ~16 µs a row (about a tenth of PostgreSQL's time), and pglz compressed ~1 GB of
-- text at less than half lz4's speed.
--
-- The foreign keys of messages, tool calls, events and snapshots go: every write goes through
-- memtrail's push, one transaction per batch, which writes a message only with its session
-- and deletes a session's or a message's rows itself (pg/src/sync.rs). The readers join, so a
-- stray row written by hand is never shown without its session.
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_session_uid_fkey;
ALTER TABLE tool_calls DROP CONSTRAINT IF EXISTS tool_calls_session_uid_message_ext_id_fkey;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_session_uid_message_ext_id_fkey;
ALTER TABLE snapshots DROP CONSTRAINT IF EXISTS snapshots_session_uid_fkey;

-- New values of the large columns compressed with lz4 where the server has it (PostgreSQL 14+
-- built with lz4, as Debian's and most are); elsewhere they stay pglz.
DO $$
BEGIN
    ALTER TABLE messages
        ALTER COLUMN body SET COMPRESSION lz4,
        ALTER COLUMN tools SET COMPRESSION lz4,
        ALTER COLUMN cjk SET COMPRESSION lz4,
        ALTER COLUMN parts SET COMPRESSION lz4,
        ALTER COLUMN tsv SET COMPRESSION lz4;
    ALTER TABLE snapshots ALTER COLUMN text SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;

-- Session lists are ordered `updated_at DESC NULLS LAST, id DESC` (pg/src/read.rs); the indexes
-- of migration 1 put NULLs first, so a list of the newest sessions sorted the whole table
-- (54 ms for 100,000 sessions). These match the order, whole or after an agent or a project.
DROP INDEX IF EXISTS sessions_by_updated;
DROP INDEX IF EXISTS sessions_by_agent_updated;
DROP INDEX IF EXISTS sessions_by_project_updated;
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC NULLS LAST, id DESC);
CREATE INDEX sessions_by_agent_updated ON sessions (agent, updated_at DESC NULLS LAST, id DESC);
CREATE INDEX sessions_by_project_updated ON sessions (project_dir, updated_at DESC NULLS LAST, id DESC);
