-- Components and meter readings.
--
-- An asset may be a component of another (parent_asset_id). No cascade: an
-- asset that has components is not deleted (409), its components are
-- removed from it first. The service refuses a parent that would make a
-- cycle, under one advisory lock that every parent change takes.
ALTER TABLE assets ADD COLUMN parent_asset_id uuid REFERENCES assets (id);
CREATE INDEX assets_parent_idx ON assets (parent_asset_id, id) WHERE parent_asset_id IS NOT NULL;

-- A reading of one of an asset's meters (operating hours, kilometres...):
-- the readings of one meter never go down in read_at order, except at a
-- reading that says the meter was reset. They go with their asset.
CREATE TABLE meter_readings (
    id         uuid PRIMARY KEY,
    asset_id   uuid NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    meter      text NOT NULL,
    value      double precision NOT NULL CHECK (value >= 0),
    read_at    timestamptz NOT NULL,
    reset      boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL
);
-- A meter's readings in read_at order (the neighbours a new reading is
-- checked against); the list pages by id within asset and meter.
CREATE INDEX meter_readings_order_idx ON meter_readings (asset_id, meter, read_at, id);
CREATE INDEX meter_readings_asset_idx ON meter_readings (asset_id, read_at, id);

---- create above / drop below ----

DROP TABLE meter_readings;
DROP INDEX assets_parent_idx;
ALTER TABLE assets DROP COLUMN parent_asset_id;
