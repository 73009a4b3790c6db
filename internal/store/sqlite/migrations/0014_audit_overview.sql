-- 0014: the overview's summary of each request (issue 23; docs/admin-api.md "Overview"): what
-- the console's charts and the top lists add up, written by the audit writer beside the
-- record so that an aggregate over a time window reads one index and no JSON.
--   cost_usd       the billed cost of all its attempts (the call log's cost)
--   input_tokens   the prompt tokens of all its attempts: input + cached + cache writes
--   output_tokens  the output tokens of all its attempts
--   deployment     its last attempt's deployment ('' without attempts)
--   ttft_ms        its last attempt's milliseconds from dispatch to the first output; NULL when none
-- Records written before this migration are summed from their attempts here, once.

ALTER TABLE requests ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN deployment TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN ttft_ms DOUBLE PRECISION;

UPDATE requests SET
    cost_usd = COALESCE((SELECT SUM(a.cost_usd) FROM attempts a WHERE a.request_id = requests.request_id), 0),
    input_tokens = COALESCE((SELECT SUM(a.input_tokens + a.cached_tokens + a.cache_write_tokens) FROM attempts a WHERE a.request_id = requests.request_id), 0),
    output_tokens = COALESCE((SELECT SUM(a.output_tokens) FROM attempts a WHERE a.request_id = requests.request_id), 0),
    deployment = COALESCE((SELECT a.deployment FROM attempts a WHERE a.request_id = requests.request_id ORDER BY a.attempt DESC LIMIT 1), ''),
    ttft_ms = (SELECT a.first_token_ms FROM attempts a WHERE a.request_id = requests.request_id ORDER BY a.attempt DESC LIMIT 1);

-- Covering the overview's queries: a window of created_at read in index order, every column
-- they group or sum by in the entry, so no table row is read. Partial on created_at > 0, a
-- term only the overview's queries write: the call log and the pruning keep their own indexes.
CREATE INDEX requests_overview ON requests (created_at, status, error_code, model, deployment, key_id, account,
    cost_usd, input_tokens, output_tokens, duration_ms, ttft_ms, stream) WHERE created_at > 0;
