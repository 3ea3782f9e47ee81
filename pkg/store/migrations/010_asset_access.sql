-- A service's copy of who sees which asset (pkg/access): the owner
-- organization and the grants of every asset the service has met, as the
-- assets service last said, and how far into the assets service's change
-- log of owners and grants the copy has read. The copy answers a bound
-- caller's reads in SQL (a join, no call per row); it is brought up to date
-- before each such read, so a grant or transfer is in force for the next
-- call. Services that record nothing on assets leave it empty.
CREATE TABLE asset_access (
    asset_id              uuid PRIMARY KEY,
    owner_organization_id uuid,
    -- every organization holding a grant, any role: what the reads filter on
    grantees              uuid[] NOT NULL DEFAULT '{}',
    grants                jsonb NOT NULL DEFAULT '[]',
    version               bigint NOT NULL
);
CREATE INDEX asset_access_owner ON asset_access (owner_organization_id);
CREATE INDEX asset_access_grantees ON asset_access USING gin (grantees);

CREATE TABLE asset_access_cursor (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  bigint NOT NULL
);

---- create above / drop below ----

DROP TABLE asset_access_cursor;
DROP TABLE asset_access;
