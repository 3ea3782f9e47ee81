---- tern: disable-tx ----
-- Webhook deliveries become a table partitioned by range of id: ids are
-- UUIDv7, so a range of ids is a range of the times the deliveries were
-- queued, and the primary key on id stays valid as the partition key. One
-- partition holds a week (from Thursday 00:00 UTC, a multiple of 7 days
-- since the Unix epoch); the maintenance task "partitions of deliveries"
-- makes the next ones ahead, and the purge drops a partition whole once
-- every delivery in it is settled and past webhooks.delivery-retention.
-- The conversion is the feed's (007): the table becomes the first
-- partition after a CHECK (id < bound) validated beside the traffic, in a
-- transaction of catalogue changes.
--
-- UNIQUE (webhook_id, event_id) cannot stay (a unique index of a
-- partitioned table must hold the partition key): a subscription's place
-- in the feed (webhooks.fanned_through), moved on under the row lock in
-- the transaction that queues its deliveries, is what queues an event once
-- per subscription (FanOut). The old index stays on the first partition.
DO $$
DECLARE
    span constant bigint := 7 * 86400000; -- a week in milliseconds
    bound text;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'deliveries'::regclass) <> 'r'
       OR EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'deliveries'::regclass AND conname = 'deliveries_0_bound') THEN
        RETURN;
    END IF;
    SET LOCAL lock_timeout = '2s';
    -- The least UUIDv7 of the second week's start after now.
    bound := lpad(to_hex((floor(extract(epoch FROM now()) * 1000 / span)::bigint + 2) * span), 12, '0');
    bound := substr(bound, 1, 8) || '-' || substr(bound, 9, 4) || '-0000-0000-000000000000';
    EXECUTE format('ALTER TABLE deliveries ADD CONSTRAINT deliveries_0_bound CHECK (id < %L::uuid) NOT VALID', bound);
END $$;

DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'deliveries'::regclass) = 'r' THEN
        ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_0_bound;
    END IF;
END $$;

DO $$
DECLARE
    span constant bigint := 7 * 86400000;
    bound_ms bigint;
    bound text;
    next text;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'deliveries'::regclass) <> 'r' THEN
        RETURN;
    END IF;
    SET LOCAL lock_timeout = '2s';
    SELECT (regexp_match(pg_get_constraintdef(oid), '''([0-9a-f-]+)'''))[1] INTO bound
    FROM pg_constraint WHERE conrelid = 'deliveries'::regclass AND conname = 'deliveries_0_bound';
    bound_ms := ('x' || lpad(replace(substr(bound, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint;
    next := lpad(to_hex(bound_ms + span), 12, '0');
    next := substr(next, 1, 8) || '-' || substr(next, 9, 4) || '-0000-0000-000000000000';

    ALTER TABLE deliveries RENAME TO deliveries_0;
    ALTER INDEX deliveries_pkey RENAME TO deliveries_0_pkey;
    ALTER INDEX deliveries_by_webhook RENAME TO deliveries_0_by_webhook;
    ALTER INDEX deliveries_in_order RENAME TO deliveries_0_in_order;
    ALTER INDEX deliveries_settled RENAME TO deliveries_0_settled;
    ALTER INDEX deliveries_leased RENAME TO deliveries_0_leased;
    ALTER INDEX deliveries_due_by_webhook RENAME TO deliveries_0_due_by_webhook;

    CREATE TABLE deliveries (LIKE deliveries_0 INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (id);
    EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION deliveries_0 FOR VALUES FROM (MINVALUE) TO (%L)', bound);
    -- Named as on the first partition, so each is adopted there, not
    -- checked again.
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'failed'));
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES webhooks ON DELETE CASCADE;
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);
    CREATE INDEX deliveries_by_webhook ON deliveries (webhook_id, id);
    CREATE INDEX deliveries_in_order ON deliveries (webhook_id, subject, event_seq) WHERE status = 'pending';
    CREATE INDEX deliveries_settled ON deliveries (status, updated_at) WHERE status <> 'pending';
    CREATE INDEX deliveries_leased ON deliveries (webhook_id, leased_until) WHERE leased_until IS NOT NULL;
    CREATE INDEX deliveries_due_by_webhook ON deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%L) TO (%L)',
        'deliveries_' || to_char(to_timestamp(bound_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MI'), bound, next);
END $$;
