-- 8: activity summaries for `memtrail web`'s analytics page (issue 15), kept by triggers so
-- that every write path (ingest, rewind, delete, purge, sync pull, repair) keeps them exact,
-- and backfilled here from the rows already stored. A page reads these small tables instead
-- of every message. Times are UTC: `day` is `ts / 86400000` (days since 1970-01-01), `slot`
-- is `ts / 300000` (5-minute slots); messages without a time are not counted.
--   activity_days:  messages per day, session and model ('' when the message names none)
--   activity_slots: messages per 5-minute slot and session (active time: slots with one)
--   tool_use:       tool calls and failed ones per tool name
--   file_edits:     file events `edited` or `written` per path (the event's subject)
-- A row whose count falls to 0 is deleted. Two indexes keep a page's reads bounded: sessions
-- by their start (sessions started per day), files by their edits (the most edited first).
    CREATE TABLE IF NOT EXISTS activity_days (
        day INTEGER NOT NULL,
        session_id INTEGER NOT NULL,
        model TEXT NOT NULL,
        messages INTEGER NOT NULL,
        PRIMARY KEY (day, session_id, model)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS activity_slots (
        slot INTEGER NOT NULL,
        session_id INTEGER NOT NULL,
        messages INTEGER NOT NULL,
        PRIMARY KEY (slot, session_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS tool_use (
        name TEXT NOT NULL PRIMARY KEY,
        calls INTEGER NOT NULL,
        errors INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS file_edits (
        path TEXT NOT NULL PRIMARY KEY,
        edits INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS file_edits_by_edits ON file_edits (edits DESC, path);
    CREATE INDEX IF NOT EXISTS sessions_by_started ON sessions (started_at);

    DROP TRIGGER IF EXISTS messages_ai_activity;
    DROP TRIGGER IF EXISTS messages_ad_activity;
    DROP TRIGGER IF EXISTS messages_au_activity;
    DROP TRIGGER IF EXISTS tool_calls_ai_use;
    DROP TRIGGER IF EXISTS tool_calls_ad_use;
    DROP TRIGGER IF EXISTS tool_calls_au_use;
    DROP TRIGGER IF EXISTS events_ai_files;
    DROP TRIGGER IF EXISTS events_ad_files;

    CREATE TRIGGER messages_ai_activity AFTER INSERT ON messages WHEN new.ts IS NOT NULL BEGIN
        INSERT INTO activity_days (day, session_id, model, messages)
            VALUES (new.ts / 86400000, new.session_id, coalesce(new.model, ''), 1)
            ON CONFLICT DO UPDATE SET messages = messages + 1;
        INSERT INTO activity_slots (slot, session_id, messages)
            VALUES (new.ts / 300000, new.session_id, 1)
            ON CONFLICT DO UPDATE SET messages = messages + 1;
    END;
    CREATE TRIGGER messages_ad_activity AFTER DELETE ON messages WHEN old.ts IS NOT NULL BEGIN
        UPDATE activity_days SET messages = messages - 1
            WHERE day = old.ts / 86400000 AND session_id = old.session_id
              AND model = coalesce(old.model, '');
        DELETE FROM activity_days
            WHERE day = old.ts / 86400000 AND session_id = old.session_id
              AND model = coalesce(old.model, '') AND messages <= 0;
        UPDATE activity_slots SET messages = messages - 1
            WHERE slot = old.ts / 300000 AND session_id = old.session_id;
        DELETE FROM activity_slots
            WHERE slot = old.ts / 300000 AND session_id = old.session_id AND messages <= 0;
    END;
    -- A changed time, model or session: the old values out, the new ones in.
    CREATE TRIGGER messages_au_activity AFTER UPDATE OF ts, model, session_id ON messages
        WHEN old.ts IS NOT new.ts OR old.model IS NOT new.model
          OR old.session_id IS NOT new.session_id BEGIN
        UPDATE activity_days SET messages = messages - 1
            WHERE old.ts IS NOT NULL AND day = old.ts / 86400000
              AND session_id = old.session_id AND model = coalesce(old.model, '');
        DELETE FROM activity_days
            WHERE old.ts IS NOT NULL AND day = old.ts / 86400000
              AND session_id = old.session_id AND model = coalesce(old.model, '')
              AND messages <= 0;
        UPDATE activity_slots SET messages = messages - 1
            WHERE old.ts IS NOT NULL AND slot = old.ts / 300000 AND session_id = old.session_id;
        DELETE FROM activity_slots
            WHERE old.ts IS NOT NULL AND slot = old.ts / 300000 AND session_id = old.session_id
              AND messages <= 0;
        INSERT INTO activity_days (day, session_id, model, messages)
            SELECT new.ts / 86400000, new.session_id, coalesce(new.model, ''), 1
            WHERE new.ts IS NOT NULL
            ON CONFLICT DO UPDATE SET messages = messages + 1;
        INSERT INTO activity_slots (slot, session_id, messages)
            SELECT new.ts / 300000, new.session_id, 1
            WHERE new.ts IS NOT NULL
            ON CONFLICT DO UPDATE SET messages = messages + 1;
    END;

    CREATE TRIGGER tool_calls_ai_use AFTER INSERT ON tool_calls BEGIN
        INSERT INTO tool_use (name, calls, errors) VALUES (new.name, 1, new.is_error != 0)
            ON CONFLICT DO UPDATE SET calls = calls + 1, errors = errors + excluded.errors;
    END;
    CREATE TRIGGER tool_calls_ad_use AFTER DELETE ON tool_calls BEGIN
        UPDATE tool_use SET calls = calls - 1, errors = errors - (old.is_error != 0)
            WHERE name = old.name;
        DELETE FROM tool_use WHERE name = old.name AND calls <= 0;
    END;
    CREATE TRIGGER tool_calls_au_use AFTER UPDATE OF name, is_error ON tool_calls
        WHEN old.name IS NOT new.name OR (old.is_error != 0) != (new.is_error != 0) BEGIN
        UPDATE tool_use SET calls = calls - 1, errors = errors - (old.is_error != 0)
            WHERE name = old.name;
        DELETE FROM tool_use WHERE name = old.name AND calls <= 0;
        INSERT INTO tool_use (name, calls, errors) VALUES (new.name, 1, new.is_error != 0)
            ON CONFLICT DO UPDATE SET calls = calls + 1, errors = errors + excluded.errors;
    END;

    CREATE TRIGGER events_ai_files AFTER INSERT ON events
        WHEN new.category = 'file' AND new.action IN ('edited', 'written') BEGIN
        INSERT INTO file_edits (path, edits) VALUES (new.subject, 1)
            ON CONFLICT DO UPDATE SET edits = edits + 1;
    END;
    CREATE TRIGGER events_ad_files AFTER DELETE ON events
        WHEN old.category = 'file' AND old.action IN ('edited', 'written') BEGIN
        UPDATE file_edits SET edits = edits - 1 WHERE path = old.subject;
        DELETE FROM file_edits WHERE path = old.subject AND edits <= 0;
    END;

    -- The backfill: what the triggers would have counted for the rows already stored.
    DELETE FROM activity_days;
    DELETE FROM activity_slots;
    DELETE FROM tool_use;
    DELETE FROM file_edits;
    INSERT INTO activity_days (day, session_id, model, messages)
        SELECT ts / 86400000, session_id, coalesce(model, ''), COUNT(*) FROM messages
        WHERE ts IS NOT NULL GROUP BY 1, 2, 3;
    INSERT INTO activity_slots (slot, session_id, messages)
        SELECT ts / 300000, session_id, COUNT(*) FROM messages
        WHERE ts IS NOT NULL GROUP BY 1, 2;
    INSERT INTO tool_use (name, calls, errors)
        SELECT name, COUNT(*), SUM(is_error != 0) FROM tool_calls GROUP BY name;
    INSERT INTO file_edits (path, edits)
        SELECT subject, COUNT(*) FROM events
        WHERE category = 'file' AND action IN ('edited', 'written') GROUP BY subject;
