-- 0007: a crash never leaves a request's money without a trace (docs/deploy.md "A replica
-- killed"). Every reserve entry names the replica (process) that wrote it; ledger_open lists the
-- reserves not yet ended by a settle or a release (written and removed in the ledger writer's
-- transactions); replicas holds each replica's heartbeat, so that a reserve whose replica is gone
-- is closed by the reconciliation (settled from the audit, or released with the mark
-- 'unsettled-crash'). At most one reserve and one release per request, as for settles: a retried
-- batch or two reconcilers at once write nothing twice.

ALTER TABLE ledger ADD COLUMN replica TEXT NOT NULL DEFAULT '';

CREATE TABLE replicas (
    id         TEXT PRIMARY KEY,
    started_at BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL
);

CREATE TABLE ledger_open (
    request_id TEXT PRIMARY KEY,
    replica    TEXT NOT NULL,
    at         BIGINT NOT NULL
);

CREATE INDEX ledger_open_at ON ledger_open (at);

-- Duplicates of earlier versions' retried batches (they change no balance) go before the
-- unique indexes are built.
CREATE INDEX ledger_dedupe ON ledger (request_id, kind, id);
DELETE FROM ledger WHERE kind IN ('reserve', 'release') AND request_id <> ''
    AND EXISTS (SELECT 1 FROM ledger d WHERE d.request_id = ledger.request_id AND d.kind = ledger.kind AND d.id < ledger.id);
DROP INDEX ledger_dedupe;

CREATE UNIQUE INDEX ledger_reserve_request ON ledger (request_id) WHERE kind = 'reserve' AND request_id <> '';
CREATE UNIQUE INDEX ledger_release_request ON ledger (request_id) WHERE kind = 'release' AND request_id <> '';
