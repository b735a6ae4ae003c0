-- 2: full-text search of messages (docs/postgres.md, "Full text").
--
-- The text of a message is indexed the way the SQLite store's `porter unicode61` tokenizer
-- indexes it: split at every ASCII punctuation character, so that a code identifier
-- (`parse_config`, `config.rs`, `HashMap::new`, `src/main.rs`, `--dry-run`) is found by each of
-- its parts and, as a phrase of its parts, by the whole. PostgreSQL's own parser would keep
-- `config.rs` (a host name), `src/main.rs` (a file path) or `a@b.c` (an e-mail address) as one
-- token that none of its parts finds. `memtrail_split` puts a U+0003 (a blank to the parser)
-- on each side of every ASCII punctuation character, which `ts_headline` keeps and the reader
-- removes again: snippets show the text as written.
CREATE FUNCTION memtrail_split(t text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(t, '([!-/:-@[-`{-~])', E'\x03\\1\x03', 'g');

-- ASCII words are stemmed by the original Porter algorithm (Snowball's `porter`), the one
-- FTS5's `porter` tokenizer runs: `news` finds `new`, `generously` finds `general`, as in the
-- SQLite store (Snowball's `english`, Porter2, stems them apart). No stop words (FTS5 keeps
-- them too: a phrase such as "database is locked" matches the words as written). Every other
-- token (words with non-ASCII letters, numbers, words with digits) is only lower-cased.
CREATE TEXT SEARCH DICTIONARY memtrail_stem (TEMPLATE = snowball, Language = porter);
CREATE TEXT SEARCH CONFIGURATION memtrail (COPY = pg_catalog.simple);
ALTER TEXT SEARCH CONFIGURATION memtrail
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart WITH memtrail_stem;

-- The searched text, weighted as the SQLite store weighs its columns: prose A (1.0), tool
-- calls B (0.4), CJK characters C (0.8; one character per token, written by the pushing
-- machine as SQLite's `cjk` column). Each column is cut to its first 100,000 characters
-- (50,000 for `cjk`) so that a row's tsvector stays under PostgreSQL's 1 MB limit: a longer
-- message is found by its beginning only.
ALTER TABLE messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('memtrail'::regconfig, memtrail_split(left(body, 100000))), 'A')
    || setweight(to_tsvector('memtrail'::regconfig, memtrail_split(left(tools, 100000))), 'B')
    || setweight(to_tsvector('simple'::regconfig, coalesce(left(cjk, 50000), '')), 'C')
) STORED;
CREATE INDEX messages_tsv ON messages USING gin (tsv);
