-- 0008: indexes of the admin API's lists (docs/admin-api.md "Lists"): each list reads newest
-- first by (created_at, id), after a filter on its account, workspace or key; every filter has
-- an index ending in (created_at, id), so a page is read in index order and stops at its limit.
-- They replace the indexes on account_id of keys and policies and on key_id of connections
-- (prefixes of the new ones).

CREATE INDEX accounts_created ON accounts (created_at, id);
CREATE INDEX workspaces_created ON workspaces (created_at, id);
CREATE INDEX workspaces_account_created ON workspaces (account_id, created_at, id);
CREATE INDEX keys_created ON keys (created_at, id);
CREATE INDEX keys_account_created ON keys (account_id, created_at, id);
CREATE INDEX keys_workspace_created ON keys (workspace_id, created_at, id);
CREATE INDEX policies_created ON policies (created_at, id);
CREATE INDEX policies_account_created ON policies (account_id, created_at, id);
CREATE INDEX connections_created ON connections (created_at, id);
CREATE INDEX connections_key_created ON connections (key_id, created_at, id);
DROP INDEX keys_account;
DROP INDEX policies_account;
DROP INDEX connections_key;
