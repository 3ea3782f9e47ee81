---- tern: disable-tx ----
-- The compliance read model keyed by the owner organization: a bound
-- caller's page of /compliance reads the assets its organization owns,
-- and those with no owner, as one range each of these indexes in page
-- order, as an unbound caller's page reads one range of latest_actions'
-- and known_assets' own. Only its grants (few) are still a walk of
-- asset_seen_by (the kit's migration 012) probing the rows of each asset.
-- Walking every asset the organization sees probed both tables for each,
-- up to the page's end: a bound page cost 1.4 times an unbound one.
--
-- owner_organization_id is the copy's (asset_access): the owner, the nil
-- organization (access.Everyone) for an asset with no owner, NULL while
-- the copy does not know the asset (no bound caller sees it then).
--
-- Outside a transaction, for the indexes on tables of millions of rows:
-- each statement stands alone and may run again after a failed attempt.
-- The triggers come before the backfill, so a row written meanwhile (by
-- a replica of either version) gets its owner from them.
ALTER TABLE latest_actions ADD COLUMN IF NOT EXISTS owner_organization_id uuid;
ALTER TABLE known_assets ADD COLUMN IF NOT EXISTS owner_organization_id uuid;

-- A row written takes its asset's owner from the copy. FOR SHARE orders
-- the write with a change of the asset's access: a change that holds the
-- copy's row is waited for (and its owner read), and a change after the
-- read waits for the write to commit, then updates its row (below). A
-- row whose asset the copy does not know yet gets NULL, and the copy's
-- insert (below) sets it. A write that names the owner (a seed's bulk
-- insert) is taken as it is.
CREATE OR REPLACE FUNCTION compliance_owner_of() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    SELECT coalesce(a.owner_organization_id, '00000000-0000-0000-0000-000000000000'::uuid) INTO NEW.owner_organization_id
    FROM asset_access a WHERE a.asset_id = NEW.asset_id FOR SHARE;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER latest_actions_owner BEFORE INSERT ON latest_actions
    FOR EACH ROW WHEN (NEW.owner_organization_id IS NULL) EXECUTE FUNCTION compliance_owner_of();
CREATE OR REPLACE TRIGGER known_assets_owner BEFORE INSERT ON known_assets
    FOR EACH ROW WHEN (NEW.owner_organization_id IS NULL) EXECUTE FUNCTION compliance_owner_of();

-- A change of the copy moves its assets' rows, once per statement (a
-- page of the change log, a seed's million rows).
CREATE OR REPLACE FUNCTION compliance_owner_follows() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE latest_actions l SET owner_organization_id = c.owner
    FROM (SELECT asset_id, coalesce(owner_organization_id, '00000000-0000-0000-0000-000000000000'::uuid) AS owner FROM changed) c
    WHERE l.asset_id = c.asset_id AND l.owner_organization_id IS DISTINCT FROM c.owner;
    UPDATE known_assets k SET owner_organization_id = c.owner
    FROM (SELECT asset_id, coalesce(owner_organization_id, '00000000-0000-0000-0000-000000000000'::uuid) AS owner FROM changed) c
    WHERE k.asset_id = c.asset_id AND k.owner_organization_id IS DISTINCT FROM c.owner;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER asset_access_compliance_owner_insert AFTER INSERT ON asset_access
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION compliance_owner_follows();
CREATE OR REPLACE TRIGGER asset_access_compliance_owner_update AFTER UPDATE ON asset_access
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION compliance_owner_follows();

-- The rows written before the triggers.
UPDATE latest_actions l SET owner_organization_id = coalesce(a.owner_organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
FROM asset_access a WHERE a.asset_id = l.asset_id AND l.owner_organization_id IS NULL;
UPDATE known_assets k SET owner_organization_id = coalesce(a.owner_organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
FROM asset_access a WHERE a.asset_id = k.asset_id AND k.owner_organization_id IS NULL;

-- latest_actions_state_idx and known_assets' primary key, each behind
-- the owner. Tombstones stay in known_assets' (an as_of page reads the
-- assets deleted after its day).
CREATE INDEX CONCURRENTLY IF NOT EXISTS latest_actions_owner_state_idx
    ON latest_actions (owner_organization_id, action_type, class, asset_id, valid_through);
CREATE INDEX CONCURRENTLY IF NOT EXISTS known_assets_owner_idx ON known_assets (owner_organization_id, asset_id);

---- create above / drop below ----

DROP INDEX known_assets_owner_idx;
DROP INDEX latest_actions_owner_state_idx;
DROP TRIGGER asset_access_compliance_owner_update ON asset_access;
DROP TRIGGER asset_access_compliance_owner_insert ON asset_access;
DROP FUNCTION compliance_owner_follows();
DROP TRIGGER known_assets_owner ON known_assets;
DROP TRIGGER latest_actions_owner ON latest_actions;
DROP FUNCTION compliance_owner_of();
ALTER TABLE known_assets DROP COLUMN owner_organization_id;
ALTER TABLE latest_actions DROP COLUMN owner_organization_id;
