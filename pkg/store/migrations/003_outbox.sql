-- The outbox (see pkg/outbox): every committed write's change event,
-- inserted in the write's own transaction, so a rolled-back write leaves
-- none and a crash after the commit loses none. The relay publishes the
-- unpublished rows oldest first (by id) to NATS JetStream, marks them, and
-- deletes them once they are older than the retention.
--
-- data and changes are json, not jsonb: the text is kept as written, so
-- data is byte for byte the representation GET answers.
CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     uuid NOT NULL, -- UUIDv7, unique by construction: no index to keep
    kind         text NOT NULL,
    subject_id   text NOT NULL,
    op           text NOT NULL CHECK (op IN ('created', 'updated', 'deleted')),
    time         timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text NOT NULL,
    request_id   text NOT NULL,
    data         json NOT NULL,
    changes      json,
    published_at timestamptz
);
-- What the relay reads: the unpublished rows, oldest first. (The retention
-- sweep walks the oldest rows by id, so every write maintains just this
-- index and the primary key.)
CREATE INDEX outbox_pending_idx ON outbox (id) WHERE published_at IS NULL;

---- create above / drop below ----

DROP TABLE outbox;
