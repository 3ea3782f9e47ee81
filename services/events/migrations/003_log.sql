-- The transparency log: every event, in feed order, is a leaf of one
-- append-only Merkle tree (RFC 6962 hashing) over the event's stored bytes.
-- A leaf's index is events.leaf; numbers are taken under the feed's lock,
-- so leaf order is seq order and no index is skipped. Events stored before
-- the log existed get theirs when the consumer's leader starts (in seq
-- order, before it stores anything new).
ALTER TABLE events ADD COLUMN leaf bigint;
CREATE UNIQUE INDEX events_by_leaf ON events (leaf);
-- What the passport looks up: an asset's actions and their documents.
CREATE INDEX events_action_by_asset ON events ((body -> 'data' ->> 'asset_id'), seq) WHERE kind = 'action';
CREATE INDEX events_action_document_by_action ON events ((body -> 'data' ->> 'action_id'), seq) WHERE kind = 'action_document';

-- The tree's size and root hash after the last append.
CREATE TABLE log_state (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    size bigint NOT NULL DEFAULT 0,
    root bytea
);
INSERT INTO log_state DEFAULT VALUES;

-- The tree's node hashes in tiles of 256: tile (level, idx) holds, 32 bytes
-- each, the hashes of the nodes at tree level 8 * level whose index runs
-- from 256 * idx (level 0: the leaves' hashes). A node of any other level is
-- hashed from at most 255 of them, so any proof reads a few rows. The last
-- tile of each level is partial and rewritten as the tree grows; the others
-- never change.
CREATE TABLE log_tiles (
    level  smallint NOT NULL,
    idx    bigint NOT NULL,
    hashes bytea NOT NULL,
    PRIMARY KEY (level, idx)
);
-- Hashes do not compress: storing them as they are saves the attempt.
ALTER TABLE log_tiles ALTER COLUMN hashes SET STORAGE EXTERNAL;

-- Every checkpoint the service signed (C2SP tlog-checkpoint as an Ed25519
-- signed note): what the self-audit holds the stored events to.
CREATE TABLE checkpoints (
    size      bigint PRIMARY KEY,
    root      bytea NOT NULL,
    note      text NOT NULL,
    signed_at timestamptz NOT NULL DEFAULT now()
);

-- A redaction of an event's personal fields (an erasure request): the
-- event's body is replaced, its leaf keeps the hash of what was signed, and
-- the redaction itself is an entry of the log (leaf), whose bytes are kept
-- here.
CREATE TABLE redactions (
    leaf       bigint PRIMARY KEY,
    event_leaf bigint NOT NULL,
    leaf_hash  bytea NOT NULL, -- the redacted event's leaf hash, as signed
    entry      text NOT NULL,  -- the log entry, exactly as hashed
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX redactions_by_event ON redactions (event_leaf);

---- create above / drop below ----

DROP TABLE redactions;
DROP TABLE checkpoints;
DROP TABLE log_tiles;
DROP TABLE log_state;
DROP INDEX events_action_document_by_action;
DROP INDEX events_action_by_asset;
DROP INDEX events_by_leaf;
ALTER TABLE events DROP COLUMN leaf;
