-- 0004: what a settle entry says about how its usage was measured (R-BILL-2). mark is
-- 'upstream-truncated' (the provider's stream was cut after output reached the caller: billed
-- for the usage produced), 'client-cancelled' (the caller went away after output started:
-- billed up to the cancellation), or '' (the response completed). usage_provenance is
-- 'observed' (the provider reported the usage) or 'estimated' (it did not: the gateway's
-- estimate), '' for entries without usage (reserve, release, credit).

ALTER TABLE ledger ADD COLUMN mark TEXT NOT NULL DEFAULT '';
ALTER TABLE ledger ADD COLUMN usage_provenance TEXT NOT NULL DEFAULT '';
