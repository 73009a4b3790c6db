-- 0003: routing policies and BYOK connections (R-POLICY, R-KEY-5, R-ORDER-7; contract.md
-- "Admin API"). A policy's order is a JSON array of deployment names; funding is house, byok or
-- byok_with_house_fallback; attempt_limit 0 is unlimited. A connection's api_key is the
-- provider credential as the admin API received it: it is stored IN THE CLEAR in this version
-- (protect the database), never returned by the admin API and never logged.

CREATE TABLE policies (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    name          TEXT NOT NULL DEFAULT '',
    "order"       JSONB NOT NULL DEFAULT '[]',
    funding       TEXT NOT NULL DEFAULT 'house' CHECK (funding IN ('house', 'byok', 'byok_with_house_fallback')),
    attempt_limit BIGINT NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL
);

CREATE INDEX policies_account ON policies (account_id);

CREATE TABLE connections (
    id         TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL REFERENCES keys (id),
    provider   TEXT NOT NULL,
    dialect    TEXT NOT NULL CHECK (dialect IN ('openai', 'anthropic')),
    base_url   TEXT NOT NULL,
    api_key    TEXT NOT NULL,            -- in the clear in this version; never returned or logged
    models     JSONB NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    revoked_at BIGINT                    -- NULL while active
);

CREATE INDEX connections_key ON connections (key_id);
