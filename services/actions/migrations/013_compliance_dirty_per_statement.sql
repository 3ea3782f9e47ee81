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

-- latest_actions and known_assets take all three events, known_readings
-- only inserts. Each old trigger is named <table>_dirty, each new one
-- <table>_dirty_<event>.
DO $$
DECLARE
    t text;
    e text;
BEGIN
    FOREACH t IN ARRAY ARRAY['latest_actions', 'known_assets', 'known_readings'] LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', t || '_dirty', t);
        FOREACH e IN ARRAY CASE WHEN t = 'known_readings' THEN ARRAY['insert'] ELSE ARRAY['insert', 'update', 'delete'] END LOOP
            EXECUTE format('CREATE TRIGGER %I AFTER %s ON %I REFERENCING %s FOR EACH STATEMENT EXECUTE FUNCTION compliance_dirty_statement()',
                t || '_dirty_' || e, upper(e), t, CASE e
                    WHEN 'insert' THEN 'NEW TABLE AS changed_after'
                    WHEN 'update' THEN 'OLD TABLE AS changed_before NEW TABLE AS changed_after'
                    ELSE 'OLD TABLE AS changed_before' END);
        END LOOP;
    END LOOP;
END $$;

---- create above / drop below ----

DO $$
DECLARE
    t text;
    e text;
BEGIN
    FOREACH t IN ARRAY ARRAY['latest_actions', 'known_assets', 'known_readings'] LOOP
        FOREACH e IN ARRAY ARRAY['insert', 'update', 'delete'] LOOP
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_dirty_' || e, t);
        END LOOP;
        EXECUTE format('CREATE TRIGGER %I AFTER %s ON %I FOR EACH ROW EXECUTE FUNCTION compliance_dirty_latest()',
            t || '_dirty', CASE WHEN t = 'known_readings' THEN 'INSERT' ELSE 'INSERT OR UPDATE OR DELETE' END, t);
    END LOOP;
END $$;
DROP FUNCTION compliance_dirty_statement();
