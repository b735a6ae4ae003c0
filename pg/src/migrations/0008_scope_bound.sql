-- 8: each session's largest message id, so that a search filtered by sessions (agent, project,
-- machine, session) walks the matches newest first from the scope's newest message instead of
-- the database's (docs/postgres.md, "Latency"). The SQLite store has the same bound (its
-- schema 11, kept there by triggers on insert and on a change of a message's session). On the
-- 1 GB bench database, where Claude Code's sessions hold the oldest messages,
-- `error test --agent claude` walked 210,295 rows of other agents first: 720 ms.
--
-- A table of its own, not a column of `sessions`: an update of `sessions` fires its activity
-- trigger (migration 6), whose join of the old and new rows grows with the square of the rows
-- updated, for every push batch; and a new table needs no trigger disabled to be filled.
--
-- Kept by statement triggers on every insert into `messages` (whoever inserts, by INSERT or
-- COPY) and every update (push updates by (session_uid, ext_id) and keeps the id, but an update
-- by hand may move a message or renumber it), so the bound is an upper bound of the session's
-- message ids; a delete leaves the bound as it was (still an upper bound). No row: the session
-- has no message. The row goes with its session (ON DELETE CASCADE: one row per session, so
-- unlike the per-message foreign keys that migration 4 dropped it costs one index probe per
-- session of a push). A message without its session (never written by the push, which writes a
-- session before its messages in the same transaction) gets no bound; the readers, which join
-- the sessions, never show it anyway.
CREATE TABLE session_bounds (
    session_uid text PRIMARY KEY REFERENCES sessions (uid) ON DELETE CASCADE,
    last_message_id bigint NOT NULL
);

CREATE FUNCTION memtrail_session_bound() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO session_bounds AS b (session_uid, last_message_id)
    SELECT n.session_uid, max(n.id) FROM new_rows n
    WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.uid = n.session_uid)
    GROUP BY 1
    ON CONFLICT (session_uid) DO UPDATE SET last_message_id = EXCLUDED.last_message_id
    WHERE b.last_message_id < EXCLUDED.last_message_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER messages_ai_bound AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_session_bound();

CREATE TRIGGER messages_au_bound AFTER UPDATE ON messages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_session_bound();

-- The messages already stored.
INSERT INTO session_bounds (session_uid, last_message_id)
SELECT m.session_uid, max(m.id) FROM messages m
WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.uid = m.session_uid)
GROUP BY 1;
