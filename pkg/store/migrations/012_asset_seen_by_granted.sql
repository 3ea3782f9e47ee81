---- tern: disable-tx ----
-- The rows of asset_seen_by (011) that a grant makes, apart: a service
-- whose own read model is keyed by the owner organization (the actions
-- service's compliance rows) reads an organization's owned assets and
-- those with no owner as ranges of its own indexes, and walks only the
-- organization's grants here. Walking all of its rows, owned ones
-- included, probed the read model twice for every asset the organization
-- owns, up to the page's end.
--
-- Outside a transaction, for the index on a table as large as the copy:
-- each statement stands alone and may run again after a failed attempt.
-- The trigger's function is replaced before the backfill, so a row
-- written meanwhile is marked by the function and the backfill marks the
-- ones written before.
ALTER TABLE asset_seen_by ADD COLUMN IF NOT EXISTS granted boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION asset_seen_by_keep() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM asset_seen_by WHERE asset_id = OLD.asset_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO asset_seen_by (organization_id, asset_id, granted)
        -- Were the owner also a grantee (the assets service never makes
        -- such a grant), its one row is the owner's.
        SELECT o, NEW.asset_id, bool_and(NEW.owner_organization_id IS NOT NULL AND o <> NEW.owner_organization_id)
        FROM unnest(CASE WHEN NEW.owner_organization_id IS NULL THEN ARRAY['00000000-0000-0000-0000-000000000000'::uuid]
            ELSE NEW.owner_organization_id || NEW.grantees END) o
        GROUP BY o;
    END IF;
    RETURN NULL;
END $$;

UPDATE asset_seen_by s SET granted = true
FROM asset_access a
WHERE a.asset_id = s.asset_id AND a.owner_organization_id IS NOT NULL AND s.organization_id <> a.owner_organization_id
    AND NOT s.granted;

CREATE INDEX CONCURRENTLY IF NOT EXISTS asset_seen_by_granted ON asset_seen_by (organization_id, asset_id) WHERE granted;

---- create above / drop below ----

DROP INDEX asset_seen_by_granted;

CREATE OR REPLACE FUNCTION asset_seen_by_keep() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM asset_seen_by WHERE asset_id = OLD.asset_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO asset_seen_by (organization_id, asset_id)
        SELECT DISTINCT o, NEW.asset_id
        FROM unnest(CASE WHEN NEW.owner_organization_id IS NULL THEN ARRAY['00000000-0000-0000-0000-000000000000'::uuid]
            ELSE NEW.owner_organization_id || NEW.grantees END) o;
    END IF;
    RETURN NULL;
END $$;

ALTER TABLE asset_seen_by DROP COLUMN granted;
