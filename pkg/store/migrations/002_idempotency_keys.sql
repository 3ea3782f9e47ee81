-- Idempotency-Key records (see pkg/idempotency): one per client and key.
-- A claim is in_flight with a lease; the answer is stored as done in the
-- same transaction as the request's writes, so a write is acknowledged
-- exactly when its record exists.
CREATE TABLE idempotency_keys (
    client      text NOT NULL,
    key         text NOT NULL,
    token       uuid NOT NULL,
    state       text NOT NULL CHECK (state IN ('in_flight', 'done')),
    lease_until timestamptz NOT NULL,
    fingerprint text,
    status      int,
    location    text,
    body        bytea,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (client, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

---- create above / drop below ----

DROP TABLE idempotency_keys;
