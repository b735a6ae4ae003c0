-- 2: reader state kept with the cursor (readers that need context across ingests).
    ALTER TABLE sources ADD COLUMN reader_state TEXT;
    ALTER TABLE sources ADD COLUMN tail_len INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sources ADD COLUMN tail_hash TEXT;
