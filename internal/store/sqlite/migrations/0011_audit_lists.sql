-- 0011: the admin API's call log (docs/admin-api.md "The call log"): the calling key of each
-- request (a stored key's id, a static key's name; '' for requests written before, and when
-- authentication is off), and indexes that read a page newest first by (created_at,
-- request_id), alone or after a filter on the account or the key. They replace the indexes
-- on (created_at) and (account, created_at) of 0001 (prefixes of the new ones).

ALTER TABLE requests ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
DROP INDEX requests_created_at;
DROP INDEX requests_account_created_at;
CREATE INDEX requests_created ON requests (created_at, request_id);
CREATE INDEX requests_account_created ON requests (account, created_at, request_id);
CREATE INDEX requests_key_created ON requests (key_id, created_at, request_id);
