-- 18: the messages of each role, by id (the index holds the row id after the role). A search
-- filtered by role (`--role user`, the MCP tool's `role`) checks each match it walks newest
-- first by a seek in this narrow index instead of reading the match's row in `messages`, whose
-- pages hold the text, and lists a role few messages hold (`system`) to walk its rows only
-- (`queries::walk_clause`, `queries::role_scope`).
    CREATE INDEX IF NOT EXISTS messages_by_role ON messages (role);
