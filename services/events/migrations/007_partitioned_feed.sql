---- tern: disable-tx ----
-- The feed (and with it the histories) becomes a table partitioned by
-- range of seq (PostgreSQL's declarative partitioning; the maintenance
-- task "partitions of events" makes the next ones ahead, 10 million seqs
-- each, and the histories' prune drops a partition whole once nothing in
-- it is kept: docs/capacity.md). An installation's events stay where they
-- are: the table becomes the first partition, holding every seq below a
-- bound, without a copy and without a lock longer than a catalogue
-- change:
--   1. the indexes the partitioned table needs that the old one lacks
--      (id and leaf, no longer unique: a unique index of a partitioned
--      table must hold the partition key) are built CONCURRENTLY;
--   2. a CHECK (seq < bound) is added NOT VALID and then validated,
--      which reads the table under SHARE UPDATE EXCLUSIVE (the feed goes
--      on being stored); the bound is two partitions' width past the
--      newest seq, so the events stored meanwhile stay under it;
--   3. in one short transaction the table is renamed events_0 (its
--      indexes too), a partitioned events takes its name, events_0 is
--      attached FOR VALUES FROM (MINVALUE) TO (bound) (the validated
--      CHECK spares the scan), and each index of events is made on the
--      partitioned table, which adopts events_0's matching index rather
--      than building it; the next two partitions are made.
-- Each step may run again (a migration cut short starts over).
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_0_by_id ON events (id);

CREATE INDEX CONCURRENTLY IF NOT EXISTS events_0_by_any_leaf ON events (leaf);

DO $$
DECLARE
    width constant bigint := 10000000;
    bound bigint;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'events'::regclass) <> 'r'
       OR EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'events'::regclass AND conname = 'events_0_bound') THEN
        RETURN;
    END IF;
    SET LOCAL lock_timeout = '2s';
    SELECT (coalesce(max(seq), 0) / width + 2) * width INTO bound FROM events;
    EXECUTE format('ALTER TABLE events ADD CONSTRAINT events_0_bound CHECK (seq < %s) NOT VALID', bound);
END $$;

DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'events'::regclass) = 'r' THEN
        ALTER TABLE events VALIDATE CONSTRAINT events_0_bound;
    END IF;
END $$;

DO $$
DECLARE
    width constant bigint := 10000000;
    bound bigint;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'events'::regclass) <> 'r' THEN
        RETURN;
    END IF;
    SET LOCAL lock_timeout = '2s';
    SELECT (regexp_match(pg_get_constraintdef(oid), '(\d+)'))[1]::bigint INTO bound
    FROM pg_constraint WHERE conrelid = 'events'::regclass AND conname = 'events_0_bound';

    ALTER TABLE events RENAME TO events_0;
    ALTER INDEX events_pkey RENAME TO events_0_pkey;
    ALTER INDEX events_by_subject RENAME TO events_0_by_subject;
    ALTER INDEX events_by_type RENAME TO events_0_by_type;
    ALTER INDEX events_by_kind RENAME TO events_0_by_kind;
    ALTER INDEX events_by_stored_at RENAME TO events_0_by_stored_at;
    ALTER INDEX events_action_by_asset RENAME TO events_0_action_by_asset;
    ALTER INDEX events_action_document_by_action RENAME TO events_0_action_document_by_action;
    -- Unique over one partition only: the feed's lock is what keeps ids
    -- and leaves unique now (StoreFromStream).
    ALTER TABLE events_0 DROP CONSTRAINT events_id_key;
    DROP INDEX events_by_leaf;

    CREATE TABLE events (LIKE events_0 INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (seq);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_0 FOR VALUES FROM (MINVALUE) TO (%s)', bound);
    ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (seq);
    CREATE INDEX events_by_id ON events (id);
    CREATE INDEX events_by_leaf ON events (leaf);
    CREATE INDEX events_by_subject ON events (kind, subject_id, seq);
    CREATE INDEX events_by_type ON events (type, seq);
    CREATE INDEX events_by_kind ON events (kind, seq);
    CREATE INDEX events_by_stored_at ON events (stored_at);
    CREATE INDEX events_action_by_asset ON events ((body -> 'data' ->> 'asset_id'), seq) WHERE kind = 'action';
    CREATE INDEX events_action_document_by_action ON events ((body -> 'data' ->> 'action_id'), seq) WHERE kind = 'action_document';
    -- Owned by the partitioned table: dropping the first partition must
    -- not drop the numbering with it.
    ALTER SEQUENCE events_seq OWNED BY events.seq;
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)', 'events_' || bound, bound, bound + width);
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)', 'events_' || (bound + width), bound + width, bound + 2 * width);
END $$;
