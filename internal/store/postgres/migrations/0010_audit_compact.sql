-- 0010: compact audit records (issue 15 item 1), as in the SQLite store's 0010: a record's
-- attempts are stored in its requests row, as one JSONB array of positional arrays
-- (attempts_json; the order of the elements is the columns of the attempts view below), instead
-- of one row each: a batch is one upsert, a record one row and its three index entries
-- (request_id, created_at, account and created_at).
--
-- Records written before this migration keep their attempts in attempts_v1 (attempts_json is
-- NULL for them) and read back as before. The view attempts has the columns and types of the
-- former table, over both, so queries written for it keep working; deleting a record deletes
-- its attempts either way.

ALTER TABLE attempts RENAME TO attempts_v1;
ALTER TABLE requests ADD COLUMN attempts_json JSONB;

CREATE VIEW attempts AS
SELECT a.request_id, a.attempt, a.deployment, a.provider, a.model, a.upstream_model, a.outcome, a.error_code,
    a.input_tokens, a.cached_tokens, a.cache_write_tokens, a.output_tokens, a.reasoning_tokens,
    a.usage_provenance, a.reserved_max_usd, a.cost_usd, a.billing_source, a.price, a.dispatched_at,
    a.headers_ms, a.first_token_ms, a.dropped_params, a.upstream_status, a.band, a.score, a.strategy, a.region
FROM attempts_v1 a JOIN requests r ON r.request_id = a.request_id
WHERE r.attempts_json IS NULL
UNION ALL
SELECT r.request_id, (e->>0)::integer, e->>1, e->>2, e->>3, e->>4, e->>5, e->>6,
    (e->>7)::bigint, (e->>8)::bigint, (e->>9)::bigint, (e->>10)::bigint, (e->>11)::bigint,
    e->>12, (e->>13)::double precision, (e->>14)::double precision, e->>15, NULLIF(e->16, 'null'::jsonb),
    (e->>17)::bigint, (e->>18)::double precision, (e->>19)::double precision, e->20, (e->>21)::integer,
    (e->>22)::integer, (e->>23)::double precision, e->>24, e->>25
FROM requests r CROSS JOIN LATERAL jsonb_array_elements(r.attempts_json) AS e
WHERE r.attempts_json IS NOT NULL;
