---- tern: disable-tx ----
-- The rows the relay publishes: unpublished and not set aside, so that
-- set-aside rows, the oldest, are never read again by each round. It
-- takes the place of 003's outbox_pending_idx, dropped once it is built.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_to_publish_idx ON outbox (id) WHERE published_at IS NULL AND set_aside_at IS NULL;
-- Whether a subject has an event set aside: asked of every row the relay
-- reads, an index that is empty while nothing is set aside.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_set_aside_idx ON outbox (kind, subject_id) WHERE set_aside_at IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS outbox_pending_idx;

---- create above / drop below ----

CREATE INDEX outbox_pending_idx ON outbox (id) WHERE published_at IS NULL;
DROP INDEX outbox_set_aside_idx;
DROP INDEX outbox_to_publish_idx;
