-- Tables every service's schema gets from the kit (pkg/store), versioned
-- apart from the service's own migrations in kit_schema_version.

-- A delete in progress of something other services may point at (see
-- pkg/refs): while the lease runs, the owner answers that the target does
-- not exist, so no new reference to it can be made while the owner asks
-- the referrers what still points at it.
CREATE TABLE pending_deletions (
    kind  text NOT NULL,
    id    uuid NOT NULL,
    token uuid NOT NULL,
    until timestamptz NOT NULL,
    PRIMARY KEY (kind, id)
);

---- create above / drop below ----

DROP TABLE pending_deletions;
