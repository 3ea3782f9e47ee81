-- A writer that does not claim its actions' source pairs (an operator's
-- insert, a bulk copy) still has them claimed, now once per statement
-- from its transition table instead of once per row. The service's own
-- inserts claim their pairs in the same statement (insertActionsSQL), so
-- the row trigger ran a PL/pgSQL call and a lookup for every action of a
-- batch only to find its claim made: under batches of 100 actions the
-- triggers' statements were a tenth of PostgreSQL's CPU.
--
-- An update still takes the row trigger, and only when it moves the pair
-- (an update of anything else used to call it too, to return at once).
-- Two rows of one statement with the same pair fail the statement on the
-- claims' primary key, as the row trigger's second insert did. A statement
-- trigger fires for the table it is on: an insert straight into one
-- partition (actions_0, ...) claims nothing, where the row trigger, cloned
-- onto every partition, did. Write to actions.
CREATE FUNCTION keep_inserted_action_source_keys() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO action_source_keys (source_system, source_reference, action_id)
    SELECT i.source_system, i.source_reference, i.id FROM inserted i
    WHERE i.source_system IS NOT NULL AND i.source_reference IS NOT NULL AND NOT i.source_duplicate
        AND NOT EXISTS (SELECT 1 FROM action_source_keys k
            WHERE k.source_system = i.source_system AND k.source_reference = i.source_reference AND k.action_id = i.id);
    RETURN NULL;
END $$;

DROP TRIGGER actions_source_key ON actions;
CREATE TRIGGER actions_source_key AFTER UPDATE ON actions FOR EACH ROW
    WHEN (OLD.source_system IS DISTINCT FROM NEW.source_system OR OLD.source_reference IS DISTINCT FROM NEW.source_reference
        OR OLD.source_duplicate IS DISTINCT FROM NEW.source_duplicate)
    EXECUTE FUNCTION keep_action_source_key();
CREATE TRIGGER actions_source_key_inserted AFTER INSERT ON actions REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION keep_inserted_action_source_keys();

---- create above / drop below ----

DROP TRIGGER actions_source_key_inserted ON actions;
DROP TRIGGER actions_source_key ON actions;
CREATE TRIGGER actions_source_key AFTER INSERT OR UPDATE ON actions
    FOR EACH ROW EXECUTE FUNCTION keep_action_source_key();
DROP FUNCTION keep_inserted_action_source_keys();
