-- Organizations as tenants (docs/events.md, "Who sees which event"): each
-- event remembers whose record it is part of, so that a bound client's
-- feed, histories, as_of reads and webhook deliveries keep only what its
-- organization sees, in SQL, against the service's copy of the assets'
-- access (asset_access, the kit's migration 010).
--   asset_id: the asset whose record the event is part of (an asset's own
--     events and its compliance rows: the subject; an action's, a grant's:
--     data.asset_id; an action document's: its action's asset); NULL for
--     what every reader sees (organizations, people, their links, asset
--     types, documents, inspection plans).
--   parties: a transfer's two organizations, whose clients alone see its
--     events (asset_id stays NULL: the receiver sees the transfer before
--     the asset).
ALTER TABLE events ADD COLUMN asset_id uuid, ADD COLUMN parties uuid[];

-- An asset's events in the feed's order: an asset's whole record, and
-- the asset an action document's action belongs to at ingest.
CREATE INDEX events_by_asset ON events (asset_id, seq) WHERE asset_id IS NOT NULL;

-- The events stored before: filled as the ingest fills them (an id that
-- is no UUID names nothing, as at ingest).
CREATE FUNCTION uuid_or_null(v text) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' THEN v::uuid END
$$;
UPDATE events SET asset_id = uuid_or_null(subject_id)
WHERE kind IN ('asset', 'compliance');
UPDATE events SET asset_id = uuid_or_null(body -> 'data' ->> 'asset_id')
WHERE kind NOT IN ('asset', 'compliance', 'action_document', 'transfer', 'organization', 'person',
    'person_organization', 'asset_type', 'document', 'inspection_plan');
UPDATE events d SET asset_id = (SELECT a.asset_id FROM events a
        WHERE a.kind = 'action' AND a.subject_id = d.body -> 'data' ->> 'action_id' AND a.asset_id IS NOT NULL
        ORDER BY a.seq DESC LIMIT 1)
WHERE d.kind = 'action_document';
UPDATE events SET parties = ARRAY[uuid_or_null(body -> 'data' ->> 'from_organization_id'),
        uuid_or_null(body -> 'data' ->> 'to_organization_id')]
WHERE kind = 'transfer';

-- Every asset the feed has met is in the copy, with the owner its latest
-- event names (version 0: any change the assets service logs is newer),
-- so that a bound client sees the assets shared before tenancy. (A schema
-- migrated without the kit's tables, as some tests do, has no copy.)
DO $$
BEGIN
    IF to_regclass('asset_access') IS NOT NULL THEN
        INSERT INTO asset_access (asset_id, owner_organization_id, version)
        SELECT DISTINCT ON (asset_id) asset_id, uuid_or_null(body -> 'data' ->> 'owner_organization_id'), 0
        FROM events WHERE kind = 'asset' AND asset_id IS NOT NULL
        ORDER BY asset_id, seq DESC
        ON CONFLICT (asset_id) DO NOTHING;
    END IF;
END $$;

DROP FUNCTION uuid_or_null(text);

-- A subscription made by a bound client delivers only what the client's
-- organization sees when the delivery is queued; NULL: every event, as
-- before.
ALTER TABLE webhooks ADD COLUMN organization_id uuid;

---- create above / drop below ----

ALTER TABLE webhooks DROP COLUMN organization_id;
DROP INDEX events_by_asset;
ALTER TABLE events DROP COLUMN parties, DROP COLUMN asset_id;
