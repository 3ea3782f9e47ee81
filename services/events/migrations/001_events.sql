-- The change feed: every event of the stream, stored once, numbered in the
-- order it was stored. One consumer stores them under an advisory lock, so
-- seq order is commit order: a reader never sees seq n+1 without seq n, and
-- no event is ever inserted before one already served.
CREATE TABLE events (
    seq        bigint PRIMARY KEY,
    id         uuid NOT NULL UNIQUE,
    type       text NOT NULL,
    kind       text NOT NULL,
    subject_id text NOT NULL,
    stored_at  timestamptz NOT NULL DEFAULT now(),
    body       json NOT NULL -- the event exactly as published: the feed, histories and deliveries send these bytes
);
CREATE SEQUENCE events_seq AS bigint OWNED BY events.seq;
CREATE INDEX events_by_subject ON events (kind, subject_id, seq);
CREATE INDEX events_by_type ON events (type, seq);
CREATE INDEX events_by_kind ON events (kind, seq);
CREATE INDEX events_by_stored_at ON events (stored_at);

-- What retention has removed from the feed: a cursor before pruned_through
-- missed events and is a 410. Histories keep each subject's latest event
-- past retention, so a resource's history never becomes a 404.
CREATE TABLE feed_horizon (
    one            boolean PRIMARY KEY DEFAULT true CHECK (one),
    pruned_through bigint NOT NULL DEFAULT 0
);
INSERT INTO feed_horizon DEFAULT VALUES;

-- Webhook subscriptions. The secret must be kept (HMAC needs it to sign);
-- the previous one signs too until previous_secret_until (rotation).
CREATE TABLE webhooks (
    id                    uuid PRIMARY KEY,
    url                   text NOT NULL,
    types                 text[] NOT NULL,
    description           text,
    secret                text NOT NULL,
    previous_secret       text,
    previous_secret_until timestamptz,
    created_at            timestamptz NOT NULL,
    created_by            text NOT NULL,
    updated_at            timestamptz NOT NULL,
    updated_by            text NOT NULL
);
CREATE INDEX webhooks_by_owner ON webhooks (created_by, id);

-- One delivery per (subscription, event), made in the transaction that
-- stores the event, so a delivery is never lost between the two. Per
-- subscription and subject only the earliest pending delivery is sent.
CREATE TABLE deliveries (
    id               uuid PRIMARY KEY,
    webhook_id       uuid NOT NULL REFERENCES webhooks ON DELETE CASCADE,
    event_seq        bigint NOT NULL,
    event_id         uuid NOT NULL,
    subject          text NOT NULL, -- kind:id
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    last_status_code integer,
    last_error       text,
    next_attempt_at  timestamptz,
    queued_at        timestamptz NOT NULL DEFAULT now(), -- retries end this long after (a manual retry starts again)
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX deliveries_by_webhook ON deliveries (webhook_id, id);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_in_order ON deliveries (webhook_id, subject, event_seq) WHERE status = 'pending';
