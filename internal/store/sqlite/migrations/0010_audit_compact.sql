-- 0010: compact audit records (issue 15 item 1). A record's attempts are stored in its requests
-- row, as one JSON array of positional arrays (attempts_json; the order of the elements is the
-- columns of the attempts view below), instead of one row each with a primary-key index and a
-- foreign-key check: a record is one row and its three index entries (request_id, created_at,
-- account and created_at), all of them appended at the end when request ids sort by time.
--
-- Records written before this migration keep their attempts in attempts_v1 (attempts_json is
-- NULL for them) and read back as before. The view attempts has the columns of the former
-- table, over both, so queries written for it keep working; deleting a record deletes its
-- attempts either way.

ALTER TABLE attempts RENAME TO attempts_v1;
ALTER TABLE requests ADD COLUMN attempts_json TEXT;

CREATE VIEW attempts AS
SELECT a.request_id, a.attempt, a.deployment, a.provider, a.model, a.upstream_model, a.outcome, a.error_code,
    a.input_tokens, a.cached_tokens, a.cache_write_tokens, a.output_tokens, a.reasoning_tokens,
    a.usage_provenance, a.reserved_max_usd, a.cost_usd, a.billing_source, a.price, a.dispatched_at,
    a.headers_ms, a.first_token_ms, a.dropped_params, a.upstream_status, a.band, a.score, a.strategy, a.region
FROM attempts_v1 a JOIN requests r ON r.request_id = a.request_id
WHERE r.attempts_json IS NULL
UNION ALL
SELECT r.request_id, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'), json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]'), json_extract(j.value, '$[5]'),
    json_extract(j.value, '$[6]'), json_extract(j.value, '$[7]'), json_extract(j.value, '$[8]'), json_extract(j.value, '$[9]'), json_extract(j.value, '$[10]'), json_extract(j.value, '$[11]'),
    json_extract(j.value, '$[12]'), json_extract(j.value, '$[13]'), json_extract(j.value, '$[14]'), json_extract(j.value, '$[15]'), json_extract(j.value, '$[16]'), json_extract(j.value, '$[17]'),
    json_extract(j.value, '$[18]'), json_extract(j.value, '$[19]'), json_extract(j.value, '$[20]'), json_extract(j.value, '$[21]'),
    json_extract(j.value, '$[22]'), json_extract(j.value, '$[23]'), json_extract(j.value, '$[24]'), json_extract(j.value, '$[25]')
FROM requests r, json_each(r.attempts_json) j
WHERE r.attempts_json IS NOT NULL;
