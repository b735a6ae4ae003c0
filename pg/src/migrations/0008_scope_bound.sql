-- 8: each session's largest message id, so that a search filtered by sessions (agent, project,
-- machine, session) walks the matches newest first from the scope's newest message instead of
-- the database's (docs/postgres.md, "Filtered search"). The SQLite store has the same bound
-- (its schema 11). On the 1 GB bench database, where Claude Code's sessions hold the oldest
-- messages, `error test --agent claude` walked 210,295 rows of other agents first: 720 ms.
--
-- Kept by a statement trigger on every insert into `messages` (whoever inserts), so it is an
-- upper bound of the session's message ids: an update keeps a message's id, and a delete
-- leaves the bound as it was (still an upper bound). NULL only for a session with no message.
ALTER TABLE sessions ADD COLUMN last_message_id bigint;

CREATE FUNCTION memtrail_session_bound() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions s SET last_message_id = x.mx
    FROM (SELECT session_uid, max(id) AS mx FROM new_rows GROUP BY 1) x
    WHERE s.uid = x.session_uid AND (s.last_message_id IS NULL OR s.last_message_id < x.mx);
    RETURN NULL;
END
$$;

CREATE TRIGGER messages_ai_bound AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memtrail_session_bound();

-- The messages already stored (1.3 s on the 1 GB bench database). The activity trigger on
-- sessions only acts on a change of folder, which this update makes none of; left on, its
-- join of the update's old and new rows is quadratic in the rows updated (29.7 s here).
ALTER TABLE sessions DISABLE TRIGGER sessions_au_activity;
UPDATE sessions s SET last_message_id = x.mx
FROM (SELECT session_uid, max(id) AS mx FROM messages GROUP BY 1) x
WHERE s.uid = x.session_uid;
ALTER TABLE sessions ENABLE TRIGGER sessions_au_activity;
