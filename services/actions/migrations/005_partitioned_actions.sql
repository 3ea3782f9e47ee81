---- tern: disable-tx ----
-- Actions become a table partitioned by range of id: ids are UUIDv7, so a
-- range of ids is a range of the times the actions were recorded, and the
-- primary key on id stays valid as the partition key. A partition holds 28
-- days (from a multiple of 28 days since the Unix epoch, UTC); the
-- maintenance task "partitions of actions" makes the next ones ahead.
-- Actions are kept for good: partitions bound what one vacuum, one index
-- and one backup of a table handle, and leave the old ones untouched.
--
-- The sync key (source_system, source_reference) was a unique index of
-- actions, which a partitioned table cannot hold (a unique index of one
-- must hold the partition key). It moves to action_source_keys, one row
-- per held pair: an insert claims its pair there first in the same
-- statement (ON CONFLICT DO NOTHING: the action is then not inserted, as
-- before), and a trigger keeps the table right for every other write (a
-- patch that changes the pair, a write of a replica still running the
-- previous binary), raising the unique violation of its primary key when
-- the pair is held; deleting the action deletes its key (ON DELETE
-- CASCADE).
--
-- The conversion is the events schema's (007): the keys are filled beside
-- the traffic (the trigger keeps them from the start), a CHECK (id <
-- bound) is validated beside the traffic, then one short transaction
-- renames the table, attaches it as the first partition and lets the
-- partitioned indexes adopt its indexes. The foreign key of action
-- documents is made again against the partitioned table, validated beside
-- the traffic. Each step may run again.
CREATE TABLE IF NOT EXISTS action_source_keys (
    source_system    text NOT NULL,
    source_reference text NOT NULL,
    action_id        uuid NOT NULL,
    PRIMARY KEY (source_system, source_reference)
);

CREATE INDEX IF NOT EXISTS action_source_keys_by_action ON action_source_keys (action_id);

-- The function keeps the schema it was made in (SET search_path FROM
-- CURRENT): a session of another search_path writing actions (an
-- operator's, the bench's seed) finds this schema's action_source_keys.
CREATE OR REPLACE FUNCTION keep_action_source_key() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF OLD.source_system IS NOT DISTINCT FROM NEW.source_system AND OLD.source_reference IS NOT DISTINCT FROM NEW.source_reference
           AND OLD.source_duplicate = NEW.source_duplicate THEN
            RETURN NULL;
        END IF;
        DELETE FROM action_source_keys WHERE action_id = OLD.id;
    END IF;
    IF NEW.source_system IS NOT NULL AND NEW.source_reference IS NOT NULL AND NOT NEW.source_duplicate
       AND NOT EXISTS (SELECT 1 FROM action_source_keys
           WHERE source_system = NEW.source_system AND source_reference = NEW.source_reference AND action_id = NEW.id) THEN
        INSERT INTO action_source_keys (source_system, source_reference, action_id)
        VALUES (NEW.source_system, NEW.source_reference, NEW.id);
    END IF;
    RETURN NULL;
END $$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'actions_source_key' AND tgrelid = 'actions'::regclass) THEN
        SET LOCAL lock_timeout = '2s';
        CREATE TRIGGER actions_source_key AFTER INSERT OR UPDATE ON actions
            FOR EACH ROW EXECUTE FUNCTION keep_action_source_key();
    END IF;
END $$;

INSERT INTO action_source_keys (source_system, source_reference, action_id)
SELECT source_system, source_reference, id FROM actions
WHERE source_system IS NOT NULL AND source_reference IS NOT NULL AND NOT source_duplicate
ON CONFLICT DO NOTHING;

DO $$
DECLARE
    span constant bigint := 28::bigint * 86400000; -- 28 days in milliseconds
    bound text;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'actions'::regclass) <> 'r'
       OR EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'actions'::regclass AND conname = 'actions_0_bound') THEN
        RETURN;
    END IF;
    SET LOCAL lock_timeout = '2s';
    -- The least UUIDv7 of the second span's start after now.
    bound := lpad(to_hex((floor(extract(epoch FROM now()) * 1000 / span)::bigint + 2) * span), 12, '0');
    bound := substr(bound, 1, 8) || '-' || substr(bound, 9, 4) || '-0000-0000-000000000000';
    EXECUTE format('ALTER TABLE actions ADD CONSTRAINT actions_0_bound CHECK (id < %L::uuid) NOT VALID', bound);
END $$;

DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'actions'::regclass) = 'r' THEN
        ALTER TABLE actions VALIDATE CONSTRAINT actions_0_bound;
    END IF;
END $$;

DO $$
DECLARE
    span constant bigint := 28::bigint * 86400000;
    bound_ms bigint;
    bound text;
    next text;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'actions'::regclass) <> 'r' THEN
        RETURN;
    END IF;
    SET LOCAL lock_timeout = '2s';
    SELECT (regexp_match(pg_get_constraintdef(oid), '''([0-9a-f-]+)'''))[1] INTO bound
    FROM pg_constraint WHERE conrelid = 'actions'::regclass AND conname = 'actions_0_bound';
    bound_ms := ('x' || lpad(replace(substr(bound, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint;
    next := lpad(to_hex(bound_ms + span), 12, '0');
    next := substr(next, 1, 8) || '-' || substr(next, 9, 4) || '-0000-0000-000000000000';

    ALTER TABLE actions RENAME TO actions_0;
    ALTER INDEX actions_pkey RENAME TO actions_0_pkey;
    ALTER INDEX actions_asset_idx RENAME TO actions_0_asset_idx;
    ALTER INDEX actions_person_idx RENAME TO actions_0_person_idx;
    ALTER INDEX actions_organization_idx RENAME TO actions_0_organization_idx;
    ALTER INDEX actions_type_idx RENAME TO actions_0_type_idx;
    ALTER INDEX actions_status_ok_idx RENAME TO actions_0_status_ok_idx;
    ALTER INDEX actions_status_finalized_idx RENAME TO actions_0_status_finalized_idx;
    ALTER INDEX actions_source_idx RENAME TO actions_0_source_idx;
    ALTER INDEX actions_source_reference_idx RENAME TO actions_0_source_reference_idx;
    ALTER INDEX actions_dates_idx RENAME TO actions_0_dates_idx;
    ALTER INDEX actions_latest_idx RENAME TO actions_0_latest_idx;
    -- action_source_keys holds the sync key now.
    DROP INDEX actions_source_key;
    DROP TRIGGER actions_source_key ON actions_0;

    -- The CHECKs of the columns come along (same names: the first
    -- partition's are adopted); the bound is the first partition's alone.
    CREATE TABLE actions (LIKE actions_0 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) PARTITION BY RANGE (id);
    ALTER TABLE actions DROP CONSTRAINT actions_0_bound;
    EXECUTE format('ALTER TABLE actions ATTACH PARTITION actions_0 FOR VALUES FROM (MINVALUE) TO (%L)', bound);
    ALTER TABLE actions ADD CONSTRAINT actions_pkey PRIMARY KEY (id);
    CREATE INDEX actions_asset_idx ON actions (asset_id, id);
    CREATE INDEX actions_person_idx ON actions (person_id, id) WHERE person_id IS NOT NULL;
    CREATE INDEX actions_organization_idx ON actions (organization_id, id) WHERE organization_id IS NOT NULL;
    CREATE INDEX actions_type_idx ON actions (action_type, id);
    CREATE INDEX actions_status_ok_idx ON actions (status_ok, id) WHERE status_ok IS NOT NULL;
    CREATE INDEX actions_status_finalized_idx ON actions (status_finalized, id) WHERE status_finalized IS NOT NULL;
    CREATE INDEX actions_source_idx ON actions (source_system, id) WHERE source_system IS NOT NULL;
    CREATE INDEX actions_source_reference_idx ON actions (source_system, source_reference, id) WHERE source_system IS NOT NULL;
    CREATE INDEX actions_dates_idx ON actions (id, performed_at, status_valid_through);
    CREATE INDEX actions_latest_idx ON actions (asset_id, action_type, performed_at DESC, id DESC) WHERE status_finalized;
    CREATE TRIGGER actions_source_key AFTER INSERT OR UPDATE ON actions
        FOR EACH ROW EXECUTE FUNCTION keep_action_source_key();

    -- The foreign keys follow the partitioned table (they named the old
    -- one); validated below, beside the traffic.
    ALTER TABLE action_documents DROP CONSTRAINT action_documents_action_id_fkey;
    ALTER TABLE action_documents ADD CONSTRAINT action_documents_action_id_fkey
        FOREIGN KEY (action_id) REFERENCES actions (id) ON DELETE CASCADE NOT VALID;
    ALTER TABLE action_source_keys ADD CONSTRAINT action_source_keys_action_id_fkey
        FOREIGN KEY (action_id) REFERENCES actions (id) ON DELETE CASCADE NOT VALID;

    EXECUTE format('CREATE TABLE %I PARTITION OF actions FOR VALUES FROM (%L) TO (%L)',
        'actions_' || to_char(to_timestamp(bound_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MI'), bound, next);
END $$;

ALTER TABLE action_documents VALIDATE CONSTRAINT action_documents_action_id_fkey;

ALTER TABLE action_source_keys VALIDATE CONSTRAINT action_source_keys_action_id_fkey;
