-- 9: `memtrail status` counts sessions and messages per agent (`Store::stats`) from an index
-- alone: the agents' index (agent, updated_at DESC) gets `message_count` at its end, so the
-- `GROUP BY agent` no longer reads every session row (12,105 sessions of the 1 GB bench store:
-- one table row looked up per index entry). The price: an ingest adds 1 to `message_count` per
-- new message, and each such update now also rewrites the session's entry in this small index.
    DROP INDEX IF EXISTS sessions_by_agent_updated;
    CREATE INDEX sessions_by_agent_updated ON sessions (agent, updated_at DESC, message_count);
