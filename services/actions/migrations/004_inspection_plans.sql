-- Inspection plans: for an action type and an asset type (or every asset
-- type), how often the action falls due (interval), how long after an
-- asset is registered its first one is due (first_due_after) and how far
-- ahead a due date counts as "due" (due_soon). The periods are ISO 8601
-- durations as the client wrote them (P12M, P1Y, P30D), checked by the
-- service (pkg/model.Period); GET /compliance reads them when it answers,
-- so a plan's change is in the next answer without rewriting any row.
CREATE TABLE inspection_plans (
    id              uuid PRIMARY KEY,
    action_type     text NOT NULL
        CHECK (action_type IN ('expert_control', 'maintenance', 'pre_use_inspection', 'repair')),
    -- NULL: every asset type that has no plan of its own for the action
    -- type. Another service's id, kept valid by the reference protocol.
    asset_type_id   uuid,
    interval_period text NOT NULL,
    first_due_after text NOT NULL,
    due_soon        text NOT NULL,
    description     text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      text NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    updated_by      text NOT NULL
);

-- One plan per action type and asset type, and one for every asset type
-- (the nil UUID stands for it: NULLs would never collide).
CREATE UNIQUE INDEX inspection_plans_key
    ON inspection_plans (action_type, (coalesce(asset_type_id, '00000000-0000-0000-0000-000000000000'::uuid)));
-- Keyset pages of a filter, and the reference protocol's question
-- (which plans name this asset type?).
CREATE INDEX inspection_plans_asset_type_idx ON inspection_plans (asset_type_id, id) WHERE asset_type_id IS NOT NULL;
CREATE INDEX inspection_plans_action_type_idx ON inspection_plans (action_type, id);

-- The date (UTC) an asset was registered, from its id: asset ids are
-- UUIDv7, whose first 48 bits are the creation time in Unix milliseconds.
-- A never-inspected asset under a plan is due its first action this date
-- plus the plan's first_due_after.
CREATE FUNCTION registered_on(asset_id uuid) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (to_timestamp(('x' || substr(replace(asset_id::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0)
        AT TIME ZONE 'UTC')::date;

---- create above / drop below ----

DROP FUNCTION registered_on(uuid);
DROP TABLE inspection_plans;
