-- The asset heads (tlog/heads): each asset's chain of the events of its
-- record, one row per chained event; its head, in its bucket of the map;
-- the map's stored nodes (a node not stored is an empty subtree's); and
-- the leaf from which the chains hold every event (the log's size when
-- this ran: an asset recorded before is complete from there) and the leaf
-- they were advanced through, by the checkpoint signed with them.
CREATE TABLE asset_chain (
    asset_id text NOT NULL,
    asset_seq bigint NOT NULL,
    leaf bigint NOT NULL,
    PRIMARY KEY (asset_id, asset_seq)
);

CREATE TABLE asset_heads (
    asset_id text PRIMARY KEY,
    bucket integer NOT NULL,
    asset_seq bigint NOT NULL,
    chain bytea NOT NULL
);
CREATE INDEX asset_heads_by_bucket ON asset_heads (bucket);

CREATE TABLE asset_head_nodes (
    level smallint NOT NULL,
    idx integer NOT NULL,
    hash bytea NOT NULL,
    PRIMARY KEY (level, idx)
);

CREATE TABLE asset_heads_state (
    from_leaf bigint NOT NULL,
    through bigint NOT NULL
);
INSERT INTO asset_heads_state (from_leaf, through) SELECT size, size FROM log_state;

-- A passport link: a capability URL to an asset's passport, which
-- answers without a token. Only the hash of its token is kept (the URL is
-- shown once, when the link is made); each fetch is counted.
CREATE TABLE passport_links (
    id uuid PRIMARY KEY,
    asset_id uuid NOT NULL,
    token_hash bytea NOT NULL UNIQUE,
    expires_at timestamptz,
    created_at timestamptz NOT NULL,
    created_by text NOT NULL,
    fetch_count bigint NOT NULL DEFAULT 0,
    last_fetched_at timestamptz
);
CREATE INDEX passport_links_by_asset ON passport_links (asset_id, id);

---- create above / drop below ----

DROP TABLE passport_links;
DROP TABLE asset_heads_state;
DROP TABLE asset_head_nodes;
DROP TABLE asset_heads;
DROP TABLE asset_chain;
