-- 6: activity summaries for `memtrail web --store postgres://…`'s analytics page (issue 15): a
-- page reads these small tables instead of every message of its range (the 1 GB bench store's
-- busiest 79 days: 3.9 s when it added up the messages). The figures are the SQLite store's
-- (schema 8, runtime/src/store/migrations/0008_activity.sql); the tables are cut for a server
-- that serves the page to a team, so that a range reads a few hundred rows whatever its size.
-- Times are UTC: `day` is `ts / 86400000` (days since 1970-01-01), `slot` is `ts / 300000`
-- (5-minute slots, 288 a day); messages without a time are not counted.
--   activity_slots:  messages per slot and session (kept to move a session's slots when its
--                    folder changes)
--   activity_agents: messages per day, agent and model ('' when the message names none)
--   project_slots:   messages per folder and slot (any session's: parallel sessions once)
--   project_days:    slots with a message per folder and day (active time = slots × 5 min)
--   tool_use:        tool calls and failed ones per tool name
--   file_edits:      file events `edited` or `written` per path (the event's subject)
-- A row whose count falls to 0 is deleted.
--
-- Kept by statement-level triggers with transition tables on `messages`, `tool_calls`,
-- `events` and `sessions` (a folder changed), so that every write (a push's upserts, a
-- message set reconciled, a session deleted, a row rewritten by `redact --rescan` on its
-- machine and pushed again, a row changed by hand) keeps them exact: each statement's rows are
-- added up once (a per-row trigger costs a function call and several upserts for every message
-- of a first sync). A message's agent and folder are its session's, which a push writes
-- before its messages. Most rows are shared by every machine (a day, a folder, a tool name):
-- every trigger that writes them first takes a transaction-level advisory lock, so two
-- machines' pushes never wait on each other's rows in opposite orders (a deadlock); the lock
-- is held to the commit, so concurrent pushes take turns from their first message on.
CREATE TABLE activity_slots (
    slot bigint NOT NULL,
    session_uid text NOT NULL,
    messages bigint NOT NULL,
    PRIMARY KEY (slot, session_uid)
);
-- A session's slots, for moving them when its folder changes.
CREATE INDEX activity_slots_by_session ON activity_slots (session_uid);
CREATE TABLE activity_agents (
    day bigint NOT NULL,
    agent text NOT NULL,
    model text NOT NULL,
    messages bigint NOT NULL,
    PRIMARY KEY (day, agent, model)
);
CREATE TABLE project_slots (
    project text NOT NULL,
    slot bigint NOT NULL,
    messages bigint NOT NULL,
    PRIMARY KEY (project, slot)
);
CREATE TABLE project_days (
    project text NOT NULL,
    day bigint NOT NULL,
    slots bigint NOT NULL,
    PRIMARY KEY (day, project)
);
CREATE TABLE tool_use (
    name text PRIMARY KEY,
    calls bigint NOT NULL,
    errors bigint NOT NULL
);
CREATE TABLE file_edits (
    path text PRIMARY KEY,
    edits bigint NOT NULL
);
-- The most edited files first, ties by path in byte order (the SQLite store's order).
CREATE INDEX file_edits_by_edits ON file_edits (edits DESC, path COLLATE "C");
-- Sessions started per day.
CREATE INDEX sessions_by_started ON sessions (started_at);
-- The rows a decrement left at 0 (normally none): what each trigger deletes, found without a
-- scan.
CREATE INDEX activity_slots_spent ON activity_slots (slot) WHERE messages <= 0;
CREATE INDEX activity_agents_spent ON activity_agents (day) WHERE messages <= 0;
CREATE INDEX project_slots_spent ON project_slots (slot) WHERE messages <= 0;
CREATE INDEX project_days_spent ON project_days (day) WHERE slots <= 0;

-- The advisory lock of the shared summaries ("mtsummar" in ASCII, as a big-endian integer) is
-- taken by every trigger below that writes one.

-- Signed project slots added to `project_slots` (+ a message more in the slot, - one fewer),
-- and the slots a project gained or lost per day to `project_days`.
CREATE FUNCTION memtrail_add_project_slots(p text[], sl bigint[], n bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    WITH up AS (
        INSERT INTO project_slots AS ps (project, slot, messages)
            SELECT x.p, x.sl, sum(x.n) FROM unnest(p, sl, n) AS x(p, sl, n)
            GROUP BY 1, 2 HAVING sum(x.n) <> 0 ORDER BY 1, 2
            ON CONFLICT (project, slot) DO UPDATE SET messages = ps.messages + excluded.messages
            RETURNING project, slot, xmax = 0 AS fresh)
    INSERT INTO project_days AS d (project, day, slots)
        SELECT project, slot / 288, count(*) FROM up WHERE fresh GROUP BY 1, 2 ORDER BY 2, 1
        ON CONFLICT (day, project) DO UPDATE SET slots = d.slots + excluded.slots;
    -- Only a decrement can leave a row at 0 (a push of new messages plans none of this).
    IF 0 < ALL(n) THEN
        RETURN;
    END IF;
    WITH gone AS (DELETE FROM project_slots WHERE messages <= 0 RETURNING project, slot)
    INSERT INTO project_days AS d (project, day, slots)
        SELECT project, slot / 288, -count(*) FROM gone GROUP BY 1, 2 ORDER BY 2, 1
        ON CONFLICT (day, project) DO UPDATE SET slots = d.slots + excluded.slots;
    DELETE FROM project_days WHERE slots <= 0;
END
$$;

-- Signed messages (session uid, time, model; +1 stored, -1 removed) added to the summaries.
-- The agent and folder come from the message's session, which a push writes first (the
-- folder can change: `memtrail_sessions_activity` moves its slots then).
CREATE FUNCTION memtrail_add_messages(u text[], t bigint[], m text[], n bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    p text[];
    sl bigint[];
    k bigint[];
    -- Whether a count goes down (only then can a row fall to 0 and be deleted).
    shrinks boolean := NOT (0 < ALL(n));
BEGIN
    PERFORM pg_advisory_xact_lock(7887055795616833906);
    INSERT INTO activity_slots AS a (slot, session_uid, messages)
        SELECT x.t / 300000, x.u, sum(x.n) FROM unnest(u, t, n) AS x(u, t, n)
        GROUP BY 1, 2 HAVING sum(x.n) <> 0 ORDER BY 1, 2
        ON CONFLICT (slot, session_uid) DO UPDATE SET messages = a.messages + excluded.messages;
    IF shrinks THEN
        DELETE FROM activity_slots WHERE messages <= 0;
    END IF;
    INSERT INTO activity_agents AS a (day, agent, model, messages)
        SELECT x.t / 86400000, s.agent, coalesce(x.m, ''), sum(x.n)
        FROM unnest(u, t, m, n) AS x(u, t, m, n) JOIN sessions s ON s.uid = x.u
        GROUP BY 1, 2, 3 HAVING sum(x.n) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (day, agent, model) DO UPDATE SET messages = a.messages + excluded.messages;
    IF shrinks THEN
        DELETE FROM activity_agents WHERE messages <= 0;
    END IF;
    SELECT array_agg(y.p), array_agg(y.sl), array_agg(y.k) INTO p, sl, k FROM (
        SELECT coalesce(s.project_dir, '') AS p, x.t / 300000 AS sl, sum(x.n) AS k
        FROM unnest(u, t, n) AS x(u, t, n) JOIN sessions s ON s.uid = x.u
        GROUP BY 1, 2 HAVING sum(x.n) <> 0) y;
    IF p IS NOT NULL THEN
        PERFORM memtrail_add_project_slots(p, sl, k);
    END IF;
END
$$;

CREATE FUNCTION memtrail_messages_activity() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    u text[];
    t bigint[];
    m text[];
    n bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(session_uid), array_agg(ts), array_agg(model), array_agg(1::bigint)
            INTO u, t, m, n FROM new_rows WHERE ts IS NOT NULL;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(session_uid), array_agg(ts), array_agg(model), array_agg(-1::bigint)
            INTO u, t, m, n FROM old_rows WHERE ts IS NOT NULL;
    ELSE
        -- An update: the old values out, the new ones in (a row whose time, model and session
        -- are unchanged adds nothing). A push's upsert of new messages fires this trigger too,
        -- with no rows: it returns before planning anything else (each statement a trigger
        -- runs is planned once per connection, and a sync's connection is new).
        IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
            RETURN NULL;
        END IF;
        SELECT array_agg(y.session_uid), array_agg(y.ts), array_agg(y.model), array_agg(y.n)
            INTO u, t, m, n FROM (
                SELECT x.session_uid, x.ts, x.model, (sign(sum(x.n)))::bigint AS n,
                       abs(sum(x.n)) AS times
                FROM (SELECT session_uid, ts, model, 1::bigint AS n FROM new_rows
                      UNION ALL SELECT session_uid, ts, model, -1 FROM old_rows) x
                WHERE x.ts IS NOT NULL GROUP BY 1, 2, 3 HAVING sum(x.n) <> 0) y,
                generate_series(1, y.times);
    END IF;
    IF u IS NOT NULL THEN
        PERFORM memtrail_add_messages(u, t, m, n);
    END IF;
    RETURN NULL;
END
$$;

-- A session whose folder changed: its slots move from the old folder to the new one.
CREATE FUNCTION memtrail_sessions_activity() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    p text[];
    sl bigint[];
    n bigint[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_rows o JOIN new_rows w ON w.uid = o.uid
                   WHERE o.project_dir IS DISTINCT FROM w.project_dir) THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(x.p), array_agg(x.slot), array_agg(x.n) INTO p, sl, n FROM (
        SELECT coalesce(o.project_dir, '') AS p, a.slot, -a.messages AS n
        FROM old_rows o JOIN new_rows w ON w.uid = o.uid
        JOIN activity_slots a ON a.session_uid = o.uid
        WHERE o.project_dir IS DISTINCT FROM w.project_dir
        UNION ALL
        SELECT coalesce(w.project_dir, ''), a.slot, a.messages
        FROM old_rows o JOIN new_rows w ON w.uid = o.uid
        JOIN activity_slots a ON a.session_uid = o.uid
        WHERE o.project_dir IS DISTINCT FROM w.project_dir) x;
    IF p IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(7887055795616833906);
        PERFORM memtrail_add_project_slots(p, sl, n);
    END IF;
    RETURN NULL;
END
$$;

-- Tools and files (every machine's), under the same lock.
CREATE FUNCTION memtrail_tool_use() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(7887055795616833906);
        INSERT INTO tool_use AS u (name, calls, errors)
            SELECT name, count(*), count(*) FILTER (WHERE is_error) FROM new_rows
            GROUP BY 1 ORDER BY 1
            ON CONFLICT (name)
            DO UPDATE SET calls = u.calls + excluded.calls, errors = u.errors + excluded.errors;
        RETURN NULL;
    ELSIF TG_OP = 'DELETE' THEN
        IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(7887055795616833906);
        INSERT INTO tool_use AS u (name, calls, errors)
            SELECT name, -count(*), -count(*) FILTER (WHERE is_error) FROM old_rows
            GROUP BY 1 ORDER BY 1
            ON CONFLICT (name)
            DO UPDATE SET calls = u.calls + excluded.calls, errors = u.errors + excluded.errors;
    ELSE
        IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(7887055795616833906);
        INSERT INTO tool_use AS u (name, calls, errors)
            SELECT name, sum(n), coalesce(sum(n) FILTER (WHERE is_error), 0) FROM (
                SELECT name, is_error, 1 AS n FROM new_rows
                UNION ALL SELECT name, is_error, -1 FROM old_rows) x
            GROUP BY 1
            HAVING sum(n) <> 0 OR coalesce(sum(n) FILTER (WHERE is_error), 0) <> 0
            ORDER BY 1
            ON CONFLICT (name)
            DO UPDATE SET calls = u.calls + excluded.calls,
                errors = u.errors + excluded.errors;
    END IF;
    DELETE FROM tool_use WHERE calls <= 0;
    RETURN NULL;
END
$$;

CREATE FUNCTION memtrail_file_edits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM new_rows
                       WHERE category = 'file' AND action IN ('edited', 'written')) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(7887055795616833906);
        INSERT INTO file_edits AS f (path, edits)
            SELECT subject, count(*) FROM new_rows
            WHERE category = 'file' AND action IN ('edited', 'written')
            GROUP BY 1 ORDER BY 1
            ON CONFLICT (path) DO UPDATE SET edits = f.edits + excluded.edits;
        RETURN NULL;
    ELSIF TG_OP = 'DELETE' THEN
        IF NOT EXISTS (SELECT 1 FROM old_rows
                       WHERE category = 'file' AND action IN ('edited', 'written')) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(7887055795616833906);
        INSERT INTO file_edits AS f (path, edits)
            SELECT subject, -count(*) FROM old_rows
            WHERE category = 'file' AND action IN ('edited', 'written')
            GROUP BY 1 ORDER BY 1
            ON CONFLICT (path) DO UPDATE SET edits = f.edits + excluded.edits;
    ELSE
        IF NOT EXISTS (SELECT 1 FROM new_rows
                       WHERE category = 'file' AND action IN ('edited', 'written')
                       UNION ALL SELECT 1 FROM old_rows
                       WHERE category = 'file' AND action IN ('edited', 'written')) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(7887055795616833906);
        INSERT INTO file_edits AS f (path, edits)
            SELECT subject, sum(n) FROM (
                SELECT subject, category, action, 1 AS n FROM new_rows
                UNION ALL SELECT subject, category, action, -1 FROM old_rows) x
            WHERE category = 'file' AND action IN ('edited', 'written')
            GROUP BY 1 HAVING sum(n) <> 0 ORDER BY 1
            ON CONFLICT (path) DO UPDATE SET edits = f.edits + excluded.edits;
    END IF;
    DELETE FROM file_edits WHERE edits <= 0;
    RETURN NULL;
END
$$;

-- Transition tables allow one event per trigger: three triggers per table (sessions: updates).
CREATE TRIGGER messages_ai_activity AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_messages_activity();
CREATE TRIGGER messages_au_activity AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_messages_activity();
CREATE TRIGGER messages_ad_activity AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_messages_activity();
CREATE TRIGGER sessions_au_activity AFTER UPDATE ON sessions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_sessions_activity();
CREATE TRIGGER tool_calls_ai_use AFTER INSERT ON tool_calls
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_tool_use();
CREATE TRIGGER tool_calls_au_use AFTER UPDATE ON tool_calls
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_tool_use();
CREATE TRIGGER tool_calls_ad_use AFTER DELETE ON tool_calls
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_tool_use();
CREATE TRIGGER events_ai_files AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_file_edits();
CREATE TRIGGER events_au_files AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_file_edits();
CREATE TRIGGER events_ad_files AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_file_edits();

-- The backfill: what the triggers would have counted for the rows already stored.
INSERT INTO activity_slots (slot, session_uid, messages)
    SELECT ts / 300000, session_uid, count(*) FROM messages
    WHERE ts IS NOT NULL GROUP BY 1, 2;
INSERT INTO activity_agents (day, agent, model, messages)
    SELECT m.ts / 86400000, s.agent, coalesce(m.model, ''), count(*)
    FROM messages m JOIN sessions s ON s.uid = m.session_uid
    WHERE m.ts IS NOT NULL GROUP BY 1, 2, 3;
INSERT INTO project_slots (project, slot, messages)
    SELECT coalesce(s.project_dir, ''), a.slot, sum(a.messages)
    FROM activity_slots a JOIN sessions s ON s.uid = a.session_uid GROUP BY 1, 2;
INSERT INTO project_days (project, day, slots)
    SELECT project, slot / 288, count(*) FROM project_slots GROUP BY 1, 2;
INSERT INTO tool_use (name, calls, errors)
    SELECT name, count(*), count(*) FILTER (WHERE is_error) FROM tool_calls GROUP BY 1;
INSERT INTO file_edits (path, edits)
    SELECT subject, count(*) FROM events
    WHERE category = 'file' AND action IN ('edited', 'written') GROUP BY 1;
