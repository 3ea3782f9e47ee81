-- A plan may name one asset (asset_id): for that asset it wins over its
-- type's plan, and the plan for every asset type, of the same action
-- type. asset_type_id may stand beside it (then it is the asset's type).
-- Keys: one plan per action type and asset type among the plans that name
-- no asset (as before), and one per action type and asset.
ALTER TABLE inspection_plans ADD COLUMN asset_id uuid;

DROP INDEX inspection_plans_key;
CREATE UNIQUE INDEX inspection_plans_key
    ON inspection_plans (action_type, (coalesce(asset_type_id, '00000000-0000-0000-0000-000000000000'::uuid)))
    WHERE asset_id IS NULL;
CREATE UNIQUE INDEX inspection_plans_asset_key ON inspection_plans (action_type, asset_id) WHERE asset_id IS NOT NULL;
CREATE INDEX inspection_plans_asset_idx ON inspection_plans (asset_id, id) WHERE asset_id IS NOT NULL;

---- create above / drop below ----

DROP INDEX inspection_plans_asset_idx;
DROP INDEX inspection_plans_asset_key;
DELETE FROM inspection_plans WHERE asset_id IS NOT NULL;
DROP INDEX inspection_plans_key;
CREATE UNIQUE INDEX inspection_plans_key
    ON inspection_plans (action_type, (coalesce(asset_type_id, '00000000-0000-0000-0000-000000000000'::uuid)));
ALTER TABLE inspection_plans DROP COLUMN asset_id;
