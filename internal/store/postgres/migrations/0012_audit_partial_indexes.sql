-- 0012: the call log's account and key indexes (0011) hold only the records that have an
-- account or a key (issue 15): with authentication off no record has either, and each record
-- then cost two index entries no query reads (the call log's filters never ask for an empty
-- account or key). The list query (internal/store/auditsql) says account <> '' and
-- key_id <> '' beside its equality, so that a generic plan may use them too. Like 0011, this
-- rebuilds the two indexes once, holding writes to requests while it runs.

DROP INDEX requests_account_created;
DROP INDEX requests_key_created;
CREATE INDEX requests_account_created ON requests (account, created_at, request_id) WHERE account <> '';
CREATE INDEX requests_key_created ON requests (key_id, created_at, request_id) WHERE key_id <> '';
