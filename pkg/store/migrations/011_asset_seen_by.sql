-- The copy of who sees which asset (010), turned around: one row per
-- organization and asset it sees, in the order of the assets' ids. A bound
-- caller's page walks this index from its cursor in page order, merged with
-- or probed from the page's own index (pkg/access.SeenThrough): the
-- owner's b-tree and the grantees' GIN index of 010 answer "does this
-- organization see it" but in no order, so a page had to gather every
-- asset the organization sees and sort them, or walk every asset and test
-- each.
--
-- An asset with an owner has a row for its owner and one for each grantee
-- (any role); an asset with no owner, which every client sees, has one row
-- for the nil organization (access.Everyone) and no other. So an
-- organization's assets are those of its own rows and those of the nil
-- one, never both: two ordered walks whose pages a query merges.
--
-- The rows follow asset_access by trigger, in the statement that changes
-- it: a change holds the asset_access row's lock, and the trigger's
-- statements read what an earlier change of the same asset committed, so
-- two changes of one asset leave the rows of the one that stands.
CREATE TABLE asset_seen_by (
    organization_id uuid NOT NULL,
    asset_id        uuid NOT NULL,
    PRIMARY KEY (organization_id, asset_id)
);

-- The rows of one asset, for the trigger's delete.
CREATE INDEX asset_seen_by_asset ON asset_seen_by (asset_id);

CREATE FUNCTION asset_seen_by_keep() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
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

CREATE TRIGGER asset_access_seen_by AFTER INSERT OR DELETE ON asset_access
    FOR EACH ROW EXECUTE FUNCTION asset_seen_by_keep();
CREATE TRIGGER asset_access_seen_by_change AFTER UPDATE ON asset_access
    FOR EACH ROW WHEN (OLD.owner_organization_id IS DISTINCT FROM NEW.owner_organization_id OR OLD.grantees IS DISTINCT FROM NEW.grantees)
    EXECUTE FUNCTION asset_seen_by_keep();

-- The copy held before this migration.
INSERT INTO asset_seen_by (organization_id, asset_id)
SELECT DISTINCT o, a.asset_id
FROM asset_access a, unnest(CASE WHEN a.owner_organization_id IS NULL THEN ARRAY['00000000-0000-0000-0000-000000000000'::uuid]
    ELSE a.owner_organization_id || a.grantees END) o;

---- create above / drop below ----

DROP TRIGGER asset_access_seen_by_change ON asset_access;
DROP TRIGGER asset_access_seen_by ON asset_access;
DROP FUNCTION asset_seen_by_keep();
DROP TABLE asset_seen_by;
