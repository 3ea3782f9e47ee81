-- Deliveries are queued after their events are stored, not in the feed's
-- transaction: each subscription keeps its place in the feed
-- (fanned_through: every event up to it has its delivery queued, if the
-- subscription names its type), and the dispatcher moves it on, a bounded
-- step at a time, in the transaction that queues the deliveries. Storing a
-- batch of events then costs the same however many subscriptions there
-- are, and nothing is lost between the two: the feed holds the events.
-- A subscription starts at the newest stored event: it receives what is
-- stored after it was made. The default keeps that true for rows inserted
-- by a binary that does not set it (during a rolling update).
CREATE FUNCTION newest_event() RETURNS bigint LANGUAGE sql STABLE
    AS 'SELECT coalesce(max(seq), 0) FROM events';
ALTER TABLE webhooks ADD COLUMN fanned_through bigint NOT NULL DEFAULT 0;
UPDATE webhooks SET fanned_through = newest_event();
ALTER TABLE webhooks ALTER COLUMN fanned_through SET DEFAULT newest_event();

-- While an attempt runs, its delivery is leased (until the attempt's
-- longest time): the deliveries of a subscription with a live lease are
-- its deliveries in flight, which a dispatcher keeps under
-- webhooks.max-in-flight, so a receiver that hangs holds only its share of
-- the workers. An outcome clears the lease; a dispatcher that dies leaves
-- it to run out.
ALTER TABLE deliveries ADD COLUMN leased_until timestamptz;
CREATE INDEX deliveries_leased ON deliveries (webhook_id, leased_until) WHERE leased_until IS NOT NULL;
-- A subscription's due deliveries, earliest first: the scheduler takes each
-- subscription's turn from here (it replaces the one queue of every
-- subscription's deliveries by time).
CREATE INDEX deliveries_due_by_webhook ON deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
DROP INDEX deliveries_due;

---- create above / drop below ----

CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
DROP INDEX deliveries_due_by_webhook;
DROP INDEX deliveries_leased;
ALTER TABLE deliveries DROP COLUMN leased_until;
ALTER TABLE webhooks DROP COLUMN fanned_through;
DROP FUNCTION newest_event();
