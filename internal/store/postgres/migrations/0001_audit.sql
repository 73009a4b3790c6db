-- 0001: the audit record of R-AUDIT-2: one row per request, one per physical attempt.
-- The same tables, columns and meaning as the SQLite store's 0001_audit.sql, in Postgres
-- types: timestamps are BIGINT Unix nanoseconds (UTC; TIMESTAMPTZ would keep only
-- microseconds), stream is BOOLEAN, JSON is JSONB.

CREATE TABLE requests (
    request_id  TEXT PRIMARY KEY,
    account     TEXT NOT NULL DEFAULT '',
    model       TEXT NOT NULL,
    surface     TEXT NOT NULL,
    status      INTEGER NOT NULL,
    error_code  TEXT NOT NULL DEFAULT '',
    stream      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  BIGINT,                      -- Unix nanoseconds, UTC; NULL for a zero time
    duration_ms DOUBLE PRECISION NOT NULL DEFAULT 0
);

CREATE INDEX requests_created_at ON requests (created_at);
CREATE INDEX requests_account_created_at ON requests (account, created_at);

CREATE TABLE attempts (
    request_id          TEXT NOT NULL REFERENCES requests (request_id) ON DELETE CASCADE,
    attempt             INTEGER NOT NULL,    -- 1-based
    deployment          TEXT NOT NULL,
    provider            TEXT NOT NULL,
    model               TEXT NOT NULL,
    upstream_model      TEXT NOT NULL,
    outcome             TEXT NOT NULL,
    error_code          TEXT NOT NULL DEFAULT '',
    input_tokens        BIGINT NOT NULL DEFAULT 0,
    cached_tokens       BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens       BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens    BIGINT NOT NULL DEFAULT 0,
    usage_provenance    TEXT NOT NULL,
    reserved_max_usd    DOUBLE PRECISION NOT NULL DEFAULT 0,
    cost_usd            DOUBLE PRECISION NOT NULL DEFAULT 0,
    billing_source      TEXT NOT NULL,
    price               JSONB,               -- {"input","output"} USD per million tokens; NULL when unpriced
    dispatched_at       BIGINT,              -- Unix nanoseconds, UTC; NULL for a zero time
    headers_ms          DOUBLE PRECISION,    -- NULL when no headers arrived
    first_token_ms      DOUBLE PRECISION,    -- NULL when no output arrived
    dropped_params      JSONB NOT NULL DEFAULT '[]', -- array of strings
    PRIMARY KEY (request_id, attempt)
);
