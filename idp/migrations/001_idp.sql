-- Machine clients of the identity provider and their secrets.

CREATE TABLE clients (
    client_id  text PRIMARY KEY CHECK (client_id ~ '^[A-Za-z0-9._-]{3,64}$'),
    scopes     text[] NOT NULL,
    resources  text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Only the SHA-256 digest of a secret is kept; the secret itself is shown
-- once, when it is made. expires_at is set when a rotation replaces the
-- secret: NULL means valid until the next rotation.
CREATE TABLE client_secrets (
    client_id  text NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    hash       bytea NOT NULL CHECK (length(hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    PRIMARY KEY (client_id, hash)
);

---- create above / drop below ----

DROP TABLE client_secrets;
DROP TABLE clients;
