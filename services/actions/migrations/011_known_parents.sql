-- Components: an asset's parent_asset_id, as the assets service's asset
-- events say it, for GET /compliance?include=components (a parent's row
-- rolls up its components' rows). Each link is kept with the span of
-- events it held in: from the event that made it (from_event) to the one
-- that ended it (until_event, NULL while it holds: the component moved,
-- was taken out, or was deleted). Event ids are UUIDv7, so an as_of day's
-- links are those whose span covers the day's end. Only an event newer
-- than every one applied to the asset changes its links.
CREATE TABLE known_parents (
    asset_id        uuid NOT NULL,
    parent_asset_id uuid NOT NULL,
    from_event      uuid NOT NULL,
    until_event     uuid
);

-- A parent's components (each step of the walk down the tree), and an
-- asset's own links.
CREATE INDEX known_parents_parent_idx ON known_parents (parent_asset_id, asset_id);
CREATE INDEX known_parents_asset_idx ON known_parents (asset_id, from_event);
CREATE UNIQUE INDEX known_parents_current ON known_parents (asset_id) WHERE until_event IS NULL;

---- create above / drop below ----

DROP TABLE known_parents;
