-- action_source_keys without its foreign key to actions. actions is
-- partitioned (migration 005), and PostgreSQL checks a key that references
-- a partitioned table with a query it plans again for every row inserted:
-- the plan is made per call to prune the partitions, and making it opens
-- the partitioned table's descriptors. Profiled under batches of 100
-- actions, that check was a fifth of PostgreSQL's CPU (a sixth in
-- planning), for a row whose action the same statement inserts.
--
-- What the key did besides, a trigger does: an action deleted takes its
-- claim on the source pair with it, as ON DELETE CASCADE did. The rows are
-- written only beside their action (the write's own claim in
-- insertActionsSQL, and keep_action_source_key for a writer that does not
-- claim), so nothing else could leave a claim without its action.
ALTER TABLE action_source_keys DROP CONSTRAINT IF EXISTS action_source_keys_action_id_fkey;

CREATE FUNCTION forget_action_source_key() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM action_source_keys WHERE action_id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER actions_forget_source_key AFTER DELETE ON actions
    FOR EACH ROW WHEN (OLD.source_system IS NOT NULL) EXECUTE FUNCTION forget_action_source_key();

---- create above / drop below ----

DROP TRIGGER actions_forget_source_key ON actions;
DROP FUNCTION forget_action_source_key();
DELETE FROM action_source_keys k WHERE NOT EXISTS (SELECT 1 FROM actions a WHERE a.id = k.action_id);
ALTER TABLE action_source_keys ADD CONSTRAINT action_source_keys_action_id_fkey
    FOREIGN KEY (action_id) REFERENCES actions (id) ON DELETE CASCADE NOT VALID;
