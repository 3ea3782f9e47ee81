-- The compliance read model (GET /compliance): what is due, per asset and
-- action type. Two tables, each kept by one writer:
--
-- latest_actions: the latest finalized action of each (asset, action type)
-- that has one, written in the transaction of every action create, update
-- and delete (so it never lags the actions and a rollback leaves nothing).
-- An (asset, action type) without a row is "never". A row keeps the
-- state's date-independent part, its class, beside valid_through:
-- failed (status_ok false), open_ended (no valid_through) or dated; which
-- of overdue, due and valid a dated row is depends on today and the
-- caller's due_before, so a query asks for valid_through ranges.
CREATE TABLE latest_actions (
    asset_id      uuid NOT NULL,
    -- "C": the key's order is byte order, the order of the action types'
    -- wire values, whatever the database's collation.
    action_type   text COLLATE "C" NOT NULL,
    action_id     uuid NOT NULL,
    performed_at  date NOT NULL,
    status_ok     boolean,
    status_use_ok boolean,
    valid_through date,
    class         text NOT NULL CHECK (class IN ('failed', 'open_ended', 'dated')),
    PRIMARY KEY (asset_id, action_type)
);

-- Pages of one action type and one class walk this index from the cursor
-- in asset order; a dated state's range of valid_through is checked on the
-- index entry, so only matching rows are read from the table, and a deep
-- page costs what the first does.
CREATE INDEX latest_actions_state_idx ON latest_actions (action_type, class, asset_id, valid_through);

-- The latest finalized action of one (asset, action type): one range scan.
CREATE INDEX actions_latest_idx ON actions (asset_id, action_type, performed_at DESC, id DESC) WHERE status_finalized;

-- known_assets: the projection of the assets service's assets, from its
-- change events (asset.created, asset.updated, asset.deleted on NATS
-- JetStream) or a rebuild from its API. event_id is the newest event
-- applied (UUIDv7, so later events have greater ids): an older event never
-- overwrites a newer one, and a deleted asset stays as a tombstone so that
-- a create replayed after its delete does not bring it back. Creation
-- order is the asset id's order (UUIDv7), the order of GET /assets.
CREATE TABLE known_assets (
    asset_id      uuid PRIMARY KEY,
    asset_type_id uuid,
    deleted       boolean NOT NULL DEFAULT false,
    event_id      uuid NOT NULL
);

CREATE INDEX known_assets_type_idx ON known_assets (asset_type_id, asset_id) WHERE NOT deleted;

-- projection_floor: events older than the floor are already in the
-- projection (a rebuild listed the assets after them) and are skipped.
CREATE TABLE projection_floor (
    projection text PRIMARY KEY,
    floor      uuid NOT NULL
);

-- The actions already recorded when this migration runs.
INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok, status_use_ok, valid_through, class)
SELECT DISTINCT ON (asset_id, action_type) asset_id, action_type, id, performed_at, status_ok, status_use_ok, status_valid_through,
    CASE WHEN status_ok = false THEN 'failed' WHEN status_valid_through IS NULL THEN 'open_ended' ELSE 'dated' END
FROM actions WHERE status_finalized
ORDER BY asset_id, action_type, performed_at DESC, id DESC;

---- create above / drop below ----

DROP TABLE projection_floor;
DROP TABLE known_assets;
DROP INDEX actions_latest_idx;
DROP TABLE latest_actions;
