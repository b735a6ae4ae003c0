-- 5: the full-text vectors kept in the message row (docs/postgres.md, "Full text"). A search
-- ranks the newest 1024 matches with `ts_rank`, which reads each one's `tsv`; stored out of line
-- (TOAST, where PostgreSQL moved most of them: a row with its text is over 2 KB), each read was
-- a lookup in the TOAST table's index and one more page (~4 buffers a match; measured on the
-- 1 GB bench store: 1,024 matches of `overflow invoice`, 3,800 buffers of the query's 9,200).
-- `STORAGE MAIN` keeps `tsv` compressed in the row; PostgreSQL moves the message's text
-- columns out of line first, and `tsv` only when the row would not fit a page without it.
-- Rows written before this migration keep their vectors where they are until rewritten.
ALTER TABLE messages ALTER COLUMN tsv SET STORAGE MAIN;
