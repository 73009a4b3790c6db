-- 0005: the operators' live routable state (issue 11 item 3, seed 001 "a routable state"): one
-- row per override of a deployment (model '') or of one route (deployment, model). disabled
-- replaces the configuration's disabled flag of that deployment or route on every replica
-- (the reload poll and the change feed read this table); deleting the row returns to the
-- configuration. updated_at is nanoseconds since the Unix epoch.

CREATE TABLE routable_overrides (
    deployment TEXT    NOT NULL,
    model      TEXT    NOT NULL DEFAULT '',
    disabled   BOOLEAN NOT NULL,
    updated_at BIGINT  NOT NULL,
    PRIMARY KEY (deployment, model)
);
