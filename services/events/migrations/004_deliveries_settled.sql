---- tern: disable-tx ----
-- The deliveries that succeeded or failed, by status and last attempt:
-- what the purge past webhooks.delivery-retention walks, and what the
-- count of failed deliveries reads, without touching the pending ones or
-- reading the table whole. Built CONCURRENTLY: an installation may hold
-- millions of deliveries, and webhooks keep being queued meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_settled ON deliveries (status, updated_at) WHERE status <> 'pending';

---- create above / drop below ----

DROP INDEX deliveries_settled;
