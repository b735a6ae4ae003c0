-- 3: the lexemes of `tsv` are computed by the pushing machine (pg/src/tsv.rs, docs/postgres.md,
-- "Full text") and sent with each message, instead of PostgreSQL computing them: the column
-- stops being generated and keeps the vectors it holds (migration 2's rule and the client's
-- agree). Queries compare lexemes as given (`$1::tsquery`), so no row's text is parsed again.
ALTER TABLE messages ALTER COLUMN tsv DROP EXPRESSION;
