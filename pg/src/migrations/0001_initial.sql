-- 1: the synced tables. Times are Unix milliseconds; `rev` is the revision a row was last written
-- at (nextval('memtrail_rev')), what pulls read by (docs/sync.md).
CREATE SEQUENCE memtrail_rev;

CREATE TABLE machines (
    id text PRIMARY KEY,
    label text NOT NULL,
    first_push_at bigint,
    last_push_at bigint
);

CREATE TABLE sessions (
    id bigserial UNIQUE,
    uid text PRIMARY KEY,
    machine_id text NOT NULL REFERENCES machines (id),
    agent text NOT NULL,
    external_id text NOT NULL,
    parent_external_id text,
    project_dir text,
    title text,
    model text,
    git_branch text,
    agent_version text,
    started_at bigint,
    updated_at bigint,
    message_count bigint NOT NULL DEFAULT 0,
    rev bigint NOT NULL,
    messages_rev bigint NOT NULL DEFAULT 0,
    UNIQUE (machine_id, agent, external_id)
);
CREATE INDEX sessions_by_machine_rev ON sessions (machine_id, rev);
CREATE INDEX sessions_by_machine_messages_rev ON sessions (machine_id, messages_rev);
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC);
CREATE INDEX sessions_by_agent_updated ON sessions (agent, updated_at DESC);
CREATE INDEX sessions_by_project_updated ON sessions (project_dir, updated_at DESC);

CREATE TABLE messages (
    id bigserial UNIQUE,
    session_uid text NOT NULL REFERENCES sessions (uid) ON DELETE CASCADE,
    machine_id text NOT NULL,
    ext_id text NOT NULL,
    seq bigint NOT NULL,
    role text NOT NULL,
    kind text NOT NULL,
    ts bigint,
    model text,
    body text NOT NULL,
    tools text NOT NULL,
    cjk text,
    parts text NOT NULL,
    rev bigint NOT NULL,
    PRIMARY KEY (session_uid, ext_id)
);
CREATE INDEX messages_by_machine_rev ON messages (machine_id, rev);
CREATE INDEX messages_by_session_seq ON messages (session_uid, seq);
CREATE INDEX messages_by_ts ON messages (ts);

CREATE TABLE tool_calls (
    session_uid text NOT NULL,
    call_id text NOT NULL,
    message_ext_id text NOT NULL,
    name text NOT NULL,
    tool text NOT NULL,
    is_error boolean NOT NULL DEFAULT false,
    has_output boolean NOT NULL DEFAULT false,
    PRIMARY KEY (session_uid, call_id),
    FOREIGN KEY (session_uid, message_ext_id) REFERENCES messages (session_uid, ext_id) ON DELETE CASCADE
);
CREATE INDEX tool_calls_by_message ON tool_calls (session_uid, message_ext_id);

CREATE TABLE events (
    session_uid text NOT NULL,
    message_ext_id text NOT NULL,
    ordinal integer NOT NULL,
    seq bigint NOT NULL,
    category text NOT NULL,
    action text NOT NULL,
    priority bigint NOT NULL,
    subject text NOT NULL,
    detail text,
    call_id text,
    tool text,
    ts bigint,
    PRIMARY KEY (session_uid, message_ext_id, ordinal),
    FOREIGN KEY (session_uid, message_ext_id) REFERENCES messages (session_uid, ext_id) ON DELETE CASCADE
);
CREATE INDEX events_by_session_seq ON events (session_uid, seq);

CREATE TABLE snapshots (
    session_uid text NOT NULL REFERENCES sessions (uid) ON DELETE CASCADE,
    ordinal integer NOT NULL,
    built_at bigint NOT NULL,
    trigger text NOT NULL,
    budget bigint NOT NULL,
    events bigint NOT NULL,
    text text NOT NULL,
    consumed_at bigint,
    consumed_by text,
    PRIMARY KEY (session_uid, ordinal)
);

-- Sessions deleted (by `deleted_by`; of machine `machine_id`), for the other machines' pulls.
CREATE TABLE deletions (
    rev bigint PRIMARY KEY,
    deleted_by text NOT NULL,
    machine_id text NOT NULL,
    agent text NOT NULL,
    external_id text NOT NULL,
    deleted_at bigint NOT NULL
);
CREATE INDEX deletions_by_deleter_rev ON deletions (deleted_by, rev);
