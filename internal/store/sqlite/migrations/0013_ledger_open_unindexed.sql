-- 0013: ledger_open holds only the reserves of requests in flight (a settle or release that
-- reaches the ledger writer before its reserve takes the reserve's place and never touches it):
-- a small table that the reconciliation reads whole. Its index on at cost a page write per
-- reserve and per end and served no query that needed it (issue 27: indexes only where a query
-- needs them).

DROP INDEX ledger_open_at;
