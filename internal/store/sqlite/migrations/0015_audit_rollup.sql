-- 0015: the overview's rollup (issue 23; docs/admin-api.md "Overview") and the caller's own
-- request id.
--
-- audit_rollup and audit_rollup_latency hold, per minute and per hour (span: 60 or 3600
-- seconds; start: the bucket's first Unix second), what the overview adds up: per dimension
-- (dim: class = error_code, '' for a success; model; deployment = the last attempt's; key =
-- key_id; account) and name, the requests, the failed ones, the cost in integer nano-USD and
-- the tokens in and out; and per latency kind (0: duration_ms of every record; 1: ttft_ms of
-- a stream with a first output) a histogram of 5% wide log-scale bins
-- (bin = floor(ln(ms + 1) / ln(1.05))), whose counts add across buckets. The audit writer
-- maintains both in each batch's transaction (internal/store/auditsql/rollup.go): it adds the
-- batch's records, and subtracts the rows a record replaces and the rows a prune deletes, so
-- the rollup always equals an aggregate over requests. The overview reads only these tables;
-- the covering index of 0014 (requests_overview) is dropped: no query reads it any more.
-- The summary columns of 0014 stay: they are what a replaced or pruned row subtracts.
--
-- caller_request_id is the caller's own x-request-id (else X-Client-Request-Id) when it is
-- 1 to 128 characters of [A-Za-z0-9._:-], else ''; the call log finds a record by it
-- (requests_caller_request_id, partial: only the records that have one).
--
-- Records written before this migration are added to the rollup here, once.

CREATE TABLE audit_rollup (
    span          BIGINT NOT NULL,
    dim           TEXT NOT NULL,
    start         BIGINT NOT NULL,
    name          TEXT NOT NULL,
    requests      BIGINT NOT NULL DEFAULT 0,
    errors        BIGINT NOT NULL DEFAULT 0,
    cost_nusd     BIGINT NOT NULL DEFAULT 0,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (span, dim, start, name)
) WITHOUT ROWID;

CREATE TABLE audit_rollup_latency (
    span  BIGINT NOT NULL,
    kind  BIGINT NOT NULL,
    start BIGINT NOT NULL,
    bin   BIGINT NOT NULL,
    count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (span, kind, start, bin)
) WITHOUT ROWID;

-- The backfill reads requests once for the sums: per minute and every combination of the
-- dimensions into a temporary table, from which each dimension's minute rows are summed; the
-- hour rows are summed from the minute rows. The latency histograms likewise.
CREATE TEMPORARY TABLE rollup_backfill AS
SELECT (created_at / 60000000000) * 60 AS start, error_code, model, deployment, key_id, account, COUNT(*) AS requests,
    SUM(CASE WHEN error_code <> '' THEN 1 ELSE 0 END) AS errors,
    SUM(CAST(ROUND(cost_usd * 1000000000) AS BIGINT)) AS cost_nusd,
    SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens
FROM requests WHERE created_at > 0
GROUP BY 1, 2, 3, 4, 5, 6;

INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
SELECT 60, 'class', start, error_code, SUM(requests), SUM(errors), SUM(cost_nusd), SUM(input_tokens), SUM(output_tokens)
FROM rollup_backfill GROUP BY start, error_code;
INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
SELECT 60, 'model', start, model, SUM(requests), SUM(errors), SUM(cost_nusd), SUM(input_tokens), SUM(output_tokens)
FROM rollup_backfill WHERE model <> '' GROUP BY start, model;
INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
SELECT 60, 'deployment', start, deployment, SUM(requests), SUM(errors), SUM(cost_nusd), SUM(input_tokens), SUM(output_tokens)
FROM rollup_backfill WHERE deployment <> '' GROUP BY start, deployment;
INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
SELECT 60, 'key', start, key_id, SUM(requests), SUM(errors), SUM(cost_nusd), SUM(input_tokens), SUM(output_tokens)
FROM rollup_backfill WHERE key_id <> '' GROUP BY start, key_id;
INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
SELECT 60, 'account', start, account, SUM(requests), SUM(errors), SUM(cost_nusd), SUM(input_tokens), SUM(output_tokens)
FROM rollup_backfill WHERE account <> '' GROUP BY start, account;
DROP TABLE rollup_backfill;

INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
SELECT 3600, dim, (start / 3600) * 3600, name, SUM(requests), SUM(errors), SUM(cost_nusd), SUM(input_tokens), SUM(output_tokens)
FROM audit_rollup WHERE span = 60 GROUP BY dim, (start / 3600) * 3600, name;

INSERT INTO audit_rollup_latency (span, kind, start, bin, count)
SELECT 60, kind, start, bin, COUNT(*) FROM (
    SELECT k.kind AS kind, (r.created_at / 60000000000) * 60 AS start,
        CAST(floor(ln((CASE WHEN (CASE k.kind WHEN 0 THEN r.duration_ms ELSE r.ttft_ms END) > 0
            THEN (CASE k.kind WHEN 0 THEN r.duration_ms ELSE r.ttft_ms END) ELSE 0 END) + 1) / 0.04879016416943205) AS BIGINT) AS bin
    FROM requests r
    CROSS JOIN (SELECT 0 AS kind UNION ALL SELECT 1) k
    WHERE r.created_at > 0 AND (k.kind = 0 OR (r.ttft_ms IS NOT NULL AND r.stream = TRUE))
) x
GROUP BY kind, start, bin;

INSERT INTO audit_rollup_latency (span, kind, start, bin, count)
SELECT 3600, kind, (start / 3600) * 3600, bin, SUM(count)
FROM audit_rollup_latency WHERE span = 60 GROUP BY kind, (start / 3600) * 3600, bin;

DROP INDEX IF EXISTS requests_overview;

ALTER TABLE requests ADD COLUMN caller_request_id TEXT NOT NULL DEFAULT '';
CREATE INDEX requests_caller_request_id ON requests (caller_request_id) WHERE caller_request_id <> '';
