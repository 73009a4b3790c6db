-- 0002: accounts, workspaces, keys and the ledger (R-KEY-1, R-BILL-1..4; contract.md
-- "Admin API"). The same tables, columns and meaning as the SQLite store's 0002_accounts.sql, in
-- Postgres types. Timestamps are BIGINT Unix nanoseconds (UTC); settings are JSONB objects;
-- costs are integer micro-USD, never floats. A key's secret is never stored: only its
-- SHA-256 (secret_hash) and a display prefix.

CREATE TABLE accounts (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL DEFAULT '',
    settings          JSONB NOT NULL DEFAULT '{}',
    billing           TEXT NOT NULL DEFAULT 'unmetered' CHECK (billing IN ('unmetered', 'prepaid')),
    balance_micro_usd BIGINT NOT NULL DEFAULT 0,
    created_at        BIGINT NOT NULL
);

CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name       TEXT NOT NULL DEFAULT '',
    settings   JSONB NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, id)
);

CREATE TABLE keys (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    workspace_id TEXT,
    name         TEXT NOT NULL DEFAULT '',
    prefix       TEXT NOT NULL,
    secret_hash  BYTEA NOT NULL UNIQUE,     -- SHA-256 of the secret
    settings     JSONB NOT NULL DEFAULT '{}',
    revoked_at   BIGINT,                    -- NULL while active
    created_at   BIGINT NOT NULL,
    FOREIGN KEY (account_id, workspace_id) REFERENCES workspaces (account_id, id)
);

CREATE INDEX keys_account ON keys (account_id);

-- account_id is not a foreign key: static keys of the configuration bill accounts that are
-- not stored.
CREATE TABLE ledger (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                 BIGINT NOT NULL,
    account_id         TEXT NOT NULL,
    key_id             TEXT NOT NULL DEFAULT '',
    request_id         TEXT NOT NULL DEFAULT '',
    model              TEXT NOT NULL DEFAULT '',
    deployment         TEXT NOT NULL DEFAULT '',
    kind               TEXT NOT NULL CHECK (kind IN ('reserve', 'settle', 'release', 'credit')),
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    cached_tokens      BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens   BIGINT NOT NULL DEFAULT 0,
    amount_micro_usd   BIGINT NOT NULL
);

CREATE INDEX ledger_account ON ledger (account_id, id);
-- One settle per request: a retried batch bills nothing twice.
CREATE UNIQUE INDEX ledger_settle_request ON ledger (request_id) WHERE kind = 'settle';
