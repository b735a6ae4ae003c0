-- 6: vectors for search by meaning (issue 14, docs/postgres.md "Search by meaning"). Each
-- machine pushes the vectors its own store made for its own messages (one per chunk of a
-- message's text, at most 4), with the model that made them (`name@version/dim`): machines
-- with different models keep theirs apart, and a search uses the searching machine's model.
-- `halfvec` (pgvector ≥ 0.7, 2 bytes a component): the store's vectors are int8 with a scale,
-- which half precision holds to 2^-11 of each component, in half the bytes of `vector`.
-- No dimension in the type (each model has its own); no ANN index: a search scans one
-- model's vectors (docs/postgres.md gives the times). No foreign key (migration 4): a push
-- deletes a message's vectors with it.
--
-- pgvector is not a trusted extension: without it (the server lacks it, or the role may not
-- create it) the table is not created and sync pushes no vectors. `migrate` runs this again
-- once the extension exists (an administrator created it later); it is idempotent.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        CREATE TABLE IF NOT EXISTS message_vectors (
            session_uid text NOT NULL,
            ext_id text NOT NULL,
            chunk integer NOT NULL,
            model text NOT NULL,
            embedding halfvec NOT NULL,
            PRIMARY KEY (session_uid, ext_id, chunk)
        );
        CREATE INDEX IF NOT EXISTS message_vectors_by_model ON message_vectors (model);
    END IF;
END
$$;
