-- Usage plans: a plan may count a meter besides the calendar ("every 12
-- months or 250 hours, whichever comes first"): usage_meter (a lowercase
-- token, as the assets service's meter readings name it) and usage_every
-- (how much usage since the last action makes the action due). Both or
-- neither. Plan versions keep them too (keep_plan_version copies the
-- columns by name).
ALTER TABLE inspection_plans ADD COLUMN usage_meter text, ADD COLUMN usage_every double precision,
    ADD CONSTRAINT inspection_plans_usage CHECK ((usage_meter IS NULL) = (usage_every IS NULL));
ALTER TABLE plan_versions ADD COLUMN usage_meter text, ADD COLUMN usage_every double precision;

-- known_readings: the assets service's meter readings, from its
-- meter_reading.created events (subject: the asset). recorded_at is when
-- the assets service recorded the reading (an as_of day reads those
-- recorded and read by its end). A reading is applied once (its id).
CREATE TABLE known_readings (
    id          uuid PRIMARY KEY,
    asset_id    uuid NOT NULL,
    meter       text NOT NULL,
    value       double precision NOT NULL,
    read_at     timestamptz NOT NULL,
    reset       boolean NOT NULL,
    recorded_at timestamptz NOT NULL
);

-- One asset's readings of one meter in read_at order: the reading at the
-- last action, the latest, and the steps between.
CREATE INDEX known_readings_meter_idx ON known_readings (asset_id, meter, read_at, id);

-- A reading may take a row over its usage: the roller announces the
-- asset's rows again (compliance_dirty, as an action's latest row does).
CREATE TRIGGER known_readings_dirty AFTER INSERT ON known_readings
    FOR EACH ROW EXECUTE FUNCTION compliance_dirty_latest();

---- create above / drop below ----

DROP TABLE known_readings;
ALTER TABLE plan_versions DROP COLUMN usage_meter, DROP COLUMN usage_every;
ALTER TABLE inspection_plans DROP CONSTRAINT inspection_plans_usage, DROP COLUMN usage_meter, DROP COLUMN usage_every;
