-- 0006: the provider's HTTP status of each attempt (R-AUDIT-2, issue 11 item 5): 200 for an
-- answer, the error status for an error answer, 0 when no response came (a deadline, a reset).
-- Attempts written before this migration read 0.

ALTER TABLE attempts ADD COLUMN upstream_status INTEGER NOT NULL DEFAULT 0;
