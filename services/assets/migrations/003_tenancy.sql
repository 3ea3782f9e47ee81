-- Organizations as tenants (docs/api.md, "Tenancy"): an asset's owner
-- organization, the grants other organizations hold on it, the transfers
-- that hand it over, and the log of every change of who sees what, which
-- the other services follow to keep their copy (docs/architecture.md,
-- "Who sees an asset"). Organizations live in the parties service: their
-- ids are kept without a foreign key, and kept valid by the reference
-- protocol (pkg/refs). Assets that exist already have no owner: they stay
-- shared, as before.

ALTER TABLE assets ADD COLUMN owner_organization_id uuid;
CREATE INDEX assets_owner_organization_idx ON assets (owner_organization_id, id) WHERE owner_organization_id IS NOT NULL;

CREATE TABLE asset_grants (
    asset_id        uuid NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL,
    role            text NOT NULL CHECK (role IN ('read', 'inspect')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      text NOT NULL,
    PRIMARY KEY (asset_id, organization_id)
);
-- What a bound caller's lists read: the assets its organization holds a
-- grant on.
CREATE INDEX asset_grants_organization_idx ON asset_grants (organization_id, asset_id);

CREATE TABLE asset_transfers (
    id                   uuid PRIMARY KEY,
    asset_id             uuid NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    from_organization_id uuid NOT NULL,
    to_organization_id   uuid NOT NULL,
    state                text NOT NULL CHECK (state IN ('pending', 'accepted', 'rejected', 'cancelled')),
    created_at           timestamptz NOT NULL DEFAULT now(),
    created_by           text NOT NULL,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    updated_by           text NOT NULL,
    CHECK (from_organization_id <> to_organization_id)
);
-- At most one pending transfer per asset: a second is a 409.
CREATE UNIQUE INDEX asset_transfers_pending_key ON asset_transfers (asset_id) WHERE state = 'pending';
CREATE INDEX asset_transfers_from_idx ON asset_transfers (from_organization_id, id);
CREATE INDEX asset_transfers_to_idx ON asset_transfers (to_organization_id, id);

-- One row per change of an asset's owner or grants after its creation,
-- written in the change's transaction under one advisory lock, so that
-- versions commit in the order they are numbered and a follower that has
-- read up to version V never finds a smaller one later.
CREATE TABLE asset_access_changes (
    version               bigserial PRIMARY KEY,
    asset_id              uuid NOT NULL,
    owner_organization_id uuid,
    grants                jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX asset_access_changes_asset_idx ON asset_access_changes (asset_id, version);

---- create above / drop below ----

DROP TABLE asset_access_changes;
DROP TABLE asset_transfers;
DROP TABLE asset_grants;
DROP INDEX assets_owner_organization_idx;
ALTER TABLE assets DROP COLUMN owner_organization_id;
