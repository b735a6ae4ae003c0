-- 6: activity summaries for `memtrail web --store postgres://…`'s analytics page (issue 15),
-- the SQLite store's schema 8 (runtime/src/store/migrations/0008_activity.sql) keyed by the
-- session's uid: a page reads these small tables instead of every message of its range (the
-- 1 GB bench store's busiest 79 days: 3.9 s when it added up the messages). Times are UTC: `day`
-- is `ts / 86400000` (days since 1970-01-01), `slot` is `ts / 300000` (5-minute slots);
-- messages without a time are not counted.
--   activity_days:  messages per day, session and model ('' when the message names none)
--   activity_slots: messages per 5-minute slot and session (active time: slots with one)
--   tool_use:       tool calls and failed ones per tool name
--   file_edits:     file events `edited` or `written` per path (the event's subject)
-- A row whose count falls to 0 is deleted.
--
-- Kept by statement-level triggers with transition tables on `messages`, `tool_calls` and
-- `events`, so that every write (a push's upserts, a message set reconciled, a session
-- deleted, a row rewritten by `redact --rescan` on its machine and pushed again) keeps them
-- exact: each statement's rows are added up once (a per-row trigger costs a function call and
-- two upserts for every message of a first sync). `tool_use` and `file_edits` are shared by
-- every machine: their triggers first take a transaction-level advisory lock, so two machines'
-- pushes that touch the same names never wait on each other's rows in opposite orders (a
-- deadlock); the lock is held to the commit, so those parts of concurrent pushes take turns.
-- `activity_days` and `activity_slots` are keyed by session, so only that session's machine
-- writes them.
CREATE TABLE activity_days (
    day bigint NOT NULL,
    session_uid text NOT NULL,
    model text NOT NULL,
    messages bigint NOT NULL,
    PRIMARY KEY (day, session_uid, model)
);
CREATE TABLE activity_slots (
    slot bigint NOT NULL,
    session_uid text NOT NULL,
    messages bigint NOT NULL,
    PRIMARY KEY (slot, session_uid)
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
CREATE INDEX activity_days_spent ON activity_days (day) WHERE messages <= 0;
CREATE INDEX activity_slots_spent ON activity_slots (slot) WHERE messages <= 0;

CREATE FUNCTION memtrail_messages_activity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO activity_days AS a (day, session_uid, model, messages)
            SELECT ts / 86400000, session_uid, coalesce(model, ''), count(*) FROM new_rows
            WHERE ts IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (day, session_uid, model)
            DO UPDATE SET messages = a.messages + excluded.messages;
        INSERT INTO activity_slots AS a (slot, session_uid, messages)
            SELECT ts / 300000, session_uid, count(*) FROM new_rows
            WHERE ts IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (slot, session_uid)
            DO UPDATE SET messages = a.messages + excluded.messages;
        RETURN NULL;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO activity_days AS a (day, session_uid, model, messages)
            SELECT ts / 86400000, session_uid, coalesce(model, ''), -count(*) FROM old_rows
            WHERE ts IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (day, session_uid, model)
            DO UPDATE SET messages = a.messages + excluded.messages;
        INSERT INTO activity_slots AS a (slot, session_uid, messages)
            SELECT ts / 300000, session_uid, -count(*) FROM old_rows
            WHERE ts IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (slot, session_uid)
            DO UPDATE SET messages = a.messages + excluded.messages;
    ELSE
        -- An update: the old values out, the new ones in (a row whose time, model and session
        -- are unchanged adds nothing).
        INSERT INTO activity_days AS a (day, session_uid, model, messages)
            SELECT ts / 86400000, session_uid, coalesce(model, ''), sum(n) FROM (
                SELECT ts, session_uid, model, 1 AS n FROM new_rows
                UNION ALL SELECT ts, session_uid, model, -1 FROM old_rows) x
            WHERE ts IS NOT NULL GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3
            ON CONFLICT (day, session_uid, model)
            DO UPDATE SET messages = a.messages + excluded.messages;
        INSERT INTO activity_slots AS a (slot, session_uid, messages)
            SELECT ts / 300000, session_uid, sum(n) FROM (
                SELECT ts, session_uid, 1 AS n FROM new_rows
                UNION ALL SELECT ts, session_uid, -1 FROM old_rows) x
            WHERE ts IS NOT NULL GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2
            ON CONFLICT (slot, session_uid)
            DO UPDATE SET messages = a.messages + excluded.messages;
    END IF;
    DELETE FROM activity_days WHERE messages <= 0;
    DELETE FROM activity_slots WHERE messages <= 0;
    RETURN NULL;
END
$$;

-- The advisory lock of the shared summaries: "mtsummar" in ASCII, as a big-endian integer.
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

-- Transition tables allow one event per trigger: three triggers per table.
CREATE TRIGGER messages_ai_activity AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_messages_activity();
CREATE TRIGGER messages_au_activity AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_messages_activity();
CREATE TRIGGER messages_ad_activity AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_messages_activity();
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
INSERT INTO activity_days (day, session_uid, model, messages)
    SELECT ts / 86400000, session_uid, coalesce(model, ''), count(*) FROM messages
    WHERE ts IS NOT NULL GROUP BY 1, 2, 3;
INSERT INTO activity_slots (slot, session_uid, messages)
    SELECT ts / 300000, session_uid, count(*) FROM messages
    WHERE ts IS NOT NULL GROUP BY 1, 2;
INSERT INTO tool_use (name, calls, errors)
    SELECT name, count(*), count(*) FILTER (WHERE is_error) FROM tool_calls GROUP BY 1;
INSERT INTO file_edits (path, edits)
    SELECT subject, count(*) FROM events
    WHERE category = 'file' AND action IN ('edited', 'written') GROUP BY 1;
