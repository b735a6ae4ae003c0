-- 22: a prompt's event keeps no copy of its text when its subject is exactly its message's body
-- (most prompts: one short line): its subject is stored empty and read from `messages.body`
-- (`recall::event_subject!`; written so by `recall::INSERT_EVENT`). At 1 GB, 131,108 of
-- 133,757 prompt events, 18 MB of text. A prompt's subject is never empty otherwise.
--
-- Rewriting these rows changes no event as read, so the running snapshot states stay valid:
-- the update trigger that drops them (0016) is set aside for the rewrite and created again as
-- it was.
    DROP TRIGGER IF EXISTS events_snapshot_state_au;
    UPDATE events SET subject = ''
    WHERE category = 'prompt' AND subject <> ''
      AND subject = (SELECT body FROM messages WHERE messages.id = events.message_id);
    CREATE TRIGGER events_snapshot_state_au AFTER UPDATE ON events BEGIN
        DELETE FROM snapshot_states
        WHERE (session_id = old.session_id AND old.seq <= last_seq)
           OR (session_id = new.session_id AND new.seq <= last_seq);
    END;
