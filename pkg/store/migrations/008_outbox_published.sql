-- Published events kept for outbox.retention move out of the outbox into
-- this table, so the outbox holds only what waits (and what is set
-- aside) and the relay reads it by its primary key: 007's partial index
-- outbox_to_publish_idx, dropped in 009, made every write wait on it (an
-- index of the pending rows is a page or two, where each insert and the
-- relay's reads and the clean-up of the rows it had deleted all met;
-- PostgreSQL showed the writers waiting on that page's lock,
-- LWLock:BufferContent, on their outbox insert).
CREATE TABLE outbox_published (
    id           bigint PRIMARY KEY, -- the outbox's: the sweep walks the oldest
    event_id     uuid NOT NULL,
    kind         text NOT NULL,
    subject_id   text NOT NULL,
    op           text NOT NULL,
    time         timestamptz NOT NULL,
    actor        text NOT NULL,
    request_id   text NOT NULL,
    data         json NOT NULL,
    changes      json,
    published_at timestamptz NOT NULL
);
-- Those an earlier relay marked in place.
WITH moved AS (
    DELETE FROM outbox WHERE published_at IS NOT NULL
    RETURNING id, event_id, kind, subject_id, op, time, actor, request_id, data, changes, published_at)
INSERT INTO outbox_published SELECT * FROM moved;

---- create above / drop below ----

INSERT INTO outbox (id, event_id, kind, subject_id, op, time, actor, request_id, data, changes, published_at)
    OVERRIDING SYSTEM VALUE
    SELECT id, event_id, kind, subject_id, op, time, actor, request_id, data, changes, published_at FROM outbox_published;
DROP TABLE outbox_published;
