-- 14: a message's prose stored once. A message whose parts are its body as one text part (a
-- prompt, most answers) keeps an empty BLOB instead of their JSON (`store::packed`), and
-- `memtrail_parts(parts_packed, body)` gives that JSON back from the body. Before this batch,
-- `schema.rs` renamed `messages.parts` to `parts_packed` (SQLite rewrites the view and the
-- triggers that name it), so that a memtrail from before, still running, fails on the column
-- instead of reading an empty BLOB as a message without parts. Rows written before keep
-- their form; `memtrail repair` rewrites them.

-- The triggers that take a message out of the full-text index fail on a row whose parts are
-- damaged (`memtrail_tools_strict`): the index holds words of it that no text can be given
-- back for, and a `delete` without them would leave them pointing at nothing. `memtrail
-- repair` takes such parts out first, then rebuilds the index.
    DROP TRIGGER IF EXISTS messages_ad;
    DROP TRIGGER IF EXISTS messages_au;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body,
                   memtrail_tools_strict(old.tools_text, old.parts_packed, old.id), old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        DELETE FROM fts_pending WHERE id = old.id;
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF body, tools_text, cjk, parts_packed ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body,
                   memtrail_tools_strict(old.tools_text, old.parts_packed, old.id), old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
    END;
-- The index's content with U+0001 and U+0002 shown as U+FFFD: `snippet()` marks a search's
-- hits with them (`query::HL_START`, `HL_END`), and a transcript holding them would fake
-- highlights. All three are separators to the tokenizer, so the index holds the same tokens.
    DROP VIEW IF EXISTS messages_text;
    CREATE VIEW messages_text AS
        SELECT id,
               replace(replace(body, char(1), char(65533)), char(2), char(65533)) AS body,
               replace(replace(memtrail_tools(tools_text, parts_packed), char(1), char(65533)),
                       char(2), char(65533)) AS tools,
               cjk
        FROM messages;
