---- tern: disable-tx ----
-- The relay reads the outbox by its primary key (008 says why).
DROP INDEX CONCURRENTLY IF EXISTS outbox_to_publish_idx;

---- create above / drop below ----

CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_to_publish_idx ON outbox (id) WHERE published_at IS NULL AND set_aside_at IS NULL;
