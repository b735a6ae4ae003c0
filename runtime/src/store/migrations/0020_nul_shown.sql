-- 20: the full-text index's content view reads a message's text through `memtrail_shown`,
-- which shows U+0000 as U+FFFD as well as U+0001 and U+0002 (schema 14 did those two with
-- `replace()`, which cannot look for a NUL). FTS5's `snippet()` builds its output with C
-- strings: a NUL in a message dropped the text after it, up to the next hit or cut, from the
-- snippets of searches (`store::packed::shown`). The tokens are the same (all four are
-- separators to `unicode61`), so the index stays as it is. A memtrail from before that still
-- runs has no such function: its searches and catch-ups fail (nothing is written) until it is
-- started again.
    DROP VIEW IF EXISTS messages_text;
    CREATE VIEW messages_text AS
        SELECT id, memtrail_shown(body) AS body,
               memtrail_shown(memtrail_tools(tools_text, parts_packed)) AS tools, cjk
        FROM messages;
