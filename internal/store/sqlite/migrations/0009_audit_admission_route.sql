-- 0009: the admission events of each request and the route context of each attempt (R-AUDIT-2,
-- issue 11 item 5; docs/audit.md). admission_events is the JSON array of GET /v1/generation;
-- band, score (NULL when the route had no metric), strategy and region are the attempt's
-- candidate as its plan had it. Rows written before this migration read [] and 0/NULL/''.

ALTER TABLE requests ADD COLUMN admission_events TEXT NOT NULL DEFAULT '[]';
ALTER TABLE attempts ADD COLUMN band INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN score DOUBLE PRECISION;
ALTER TABLE attempts ADD COLUMN strategy TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN region TEXT NOT NULL DEFAULT '';
