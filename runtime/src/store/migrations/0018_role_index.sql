-- 18: the messages of each role, by id (the index holds the row id after the role). A search
-- filtered by role (`--role user`, the MCP tool's `role`) checks each match it walks newest
-- first by a seek in this narrow index instead of reading the match's row in `messages`, whose
-- pages hold the text, and lists a role few messages hold (`system`) to walk its rows only
-- (`queries::walk_clause`, `queries::role_scope`). The index is on `role || ''`, which only
-- those statements name: SQLite, with no statistics, takes any `role = ?` as selective and
-- would drive other statements from an index on `role` itself, even an older memtrail's still
-- running (a search walking a listed range of row ids looked each of the role's rows up in
-- FTS5: over 10 s against 2.4 ms, SQLite 3.54.1).
    CREATE INDEX IF NOT EXISTS messages_by_role ON messages ((role || ''));
