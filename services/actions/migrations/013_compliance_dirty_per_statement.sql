-- compliance_dirty is filled once per statement, not once per row: a
-- statement that writes many rows of latest_actions, known_assets or
-- known_readings (a batch of meter readings, a batch of actions, a
-- rebuild's batch) queues each asset it touched once, from the
-- statement's transition tables. A row trigger queued an entry per row:
-- a batch of 1,000 readings of ten assets left 1,000 entries for the
-- roller to take and fold into ten, and a day that moves a million
-- usage-based rows queued as many. The roller announces an asset once
-- however many entries name it, so fewer entries change no event.
--
-- PostgreSQL takes transition tables only on a trigger of one event,
-- hence three triggers per table (known_readings is only inserted into).
-- The entries of one statement go in asset order: they name different
-- assets, whose announcements are independent of each other.
--
-- The writer's trigger on the outbox (migration 006) stays a row
-- trigger: its WHEN lets every event but an action's pass without a
-- call, where a transition table would copy every event of every
-- outbox insert (the roller's own compliance.updated events included,
-- a million on a busy day) to find the few action events among them.
CREATE FUNCTION compliance_dirty_statement() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    -- Only the transition tables the firing trigger declares are named
    -- in its branch (PL/pgSQL plans a statement when it first runs it).
    IF TG_OP = 'INSERT' THEN
        INSERT INTO compliance_dirty (asset_id) SELECT DISTINCT asset_id FROM changed_after ORDER BY asset_id;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO compliance_dirty (asset_id)
            SELECT asset_id FROM changed_before UNION SELECT asset_id FROM changed_after ORDER BY asset_id;
    ELSE
        INSERT INTO compliance_dirty (asset_id) SELECT DISTINCT asset_id FROM changed_before ORDER BY asset_id;
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER latest_actions_dirty ON latest_actions;
CREATE TRIGGER latest_actions_dirty_insert AFTER INSERT ON latest_actions
    REFERENCING NEW TABLE AS changed_after FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement();
CREATE TRIGGER latest_actions_dirty_update AFTER UPDATE ON latest_actions
    REFERENCING OLD TABLE AS changed_before NEW TABLE AS changed_after FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement();
CREATE TRIGGER latest_actions_dirty_delete AFTER DELETE ON latest_actions
    REFERENCING OLD TABLE AS changed_before FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement();

DROP TRIGGER known_assets_dirty ON known_assets;
CREATE TRIGGER known_assets_dirty_insert AFTER INSERT ON known_assets
    REFERENCING NEW TABLE AS changed_after FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement();
CREATE TRIGGER known_assets_dirty_update AFTER UPDATE ON known_assets
    REFERENCING OLD TABLE AS changed_before NEW TABLE AS changed_after FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement();
CREATE TRIGGER known_assets_dirty_delete AFTER DELETE ON known_assets
    REFERENCING OLD TABLE AS changed_before FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement();

DROP TRIGGER known_readings_dirty ON known_readings;
CREATE TRIGGER known_readings_dirty_insert AFTER INSERT ON known_readings
    REFERENCING NEW TABLE AS changed_after FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement();

---- create above / drop below ----

DROP TRIGGER known_readings_dirty_insert ON known_readings;
CREATE TRIGGER known_readings_dirty AFTER INSERT ON known_readings
    FOR EACH ROW EXECUTE FUNCTION compliance_dirty_latest();
DROP TRIGGER known_assets_dirty_insert ON known_assets;
DROP TRIGGER known_assets_dirty_update ON known_assets;
DROP TRIGGER known_assets_dirty_delete ON known_assets;
CREATE TRIGGER known_assets_dirty AFTER INSERT OR UPDATE OR DELETE ON known_assets
    FOR EACH ROW EXECUTE FUNCTION compliance_dirty_latest();
DROP TRIGGER latest_actions_dirty_insert ON latest_actions;
DROP TRIGGER latest_actions_dirty_update ON latest_actions;
DROP TRIGGER latest_actions_dirty_delete ON latest_actions;
CREATE TRIGGER latest_actions_dirty AFTER INSERT OR UPDATE OR DELETE ON latest_actions
    FOR EACH ROW EXECUTE FUNCTION compliance_dirty_latest();
DROP FUNCTION compliance_dirty_statement();
