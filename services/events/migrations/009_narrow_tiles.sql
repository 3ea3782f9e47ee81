-- The log's tiles narrow from 256 hashes a row (8 KiB, which PostgreSQL
-- keeps out of line, in TOAST: a proof read about eight buffers for its
-- leaf's tile, and an append rewrote 8 KiB for each partial tile) to 16
-- (512 bytes, inline in the table's page): tile (level, idx) now holds the
-- hashes of the nodes at tree level 4 * level whose index runs from
-- 16 * idx. The tree, its root and every proof stay what they were: only
-- the rows that hold its node hashes change.
--
-- The new table has a name of its own, so that a replica still running the
-- previous binary during a rolling update fails on the missing log_tiles
-- (its proofs answer 500, its consumer's transactions roll back and the
-- stream delivers their events again) rather than reading, or writing, 16
-- hashes where it expects 256.
CREATE TABLE log_tiles16 (
    level  smallint NOT NULL,
    idx    bigint NOT NULL,
    hashes bytea NOT NULL,
    PRIMARY KEY (level, idx)
);
-- Hashes do not compress, and 512 bytes stay far below the size at which
-- PostgreSQL would move a value out of line.
ALTER TABLE log_tiles16 ALTER COLUMN hashes SET STORAGE PLAIN;

-- RFC 6962's root of the subtree over 16 node hashes (32 bytes each): an
-- interior node is SHA-256 of 0x01 and its two children.
CREATE FUNCTION log_subtree_root(hashes bytea) RETURNS bytea LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    nodes bytea := hashes;
    above bytea;
BEGIN
    WHILE length(nodes) > 32 LOOP
        above := ''::bytea;
        FOR i IN 0 .. length(nodes) / 64 - 1 LOOP
            above := above || sha256('\x01'::bytea || substring(nodes FROM i * 64 + 1 FOR 64));
        END LOOP;
        nodes := above;
    END LOOP;
    RETURN nodes;
END $$;

-- Tree level 8k: the old tile (k, idx) cut in 16 tiles of level 2k.
INSERT INTO log_tiles16 (level, idx, hashes)
SELECT 2 * t.level, 16 * t.idx + k, substring(t.hashes FROM k * 512 + 1 FOR 512)
FROM log_tiles t, generate_series(0, (length(t.hashes) / 32 - 1) / 16) AS k;

-- Tree level 8k + 4: each node the root over 16 consecutive hashes of the
-- old tile (k, idx), whose 256 hashes are those under the 16 of tile
-- (2k + 1, idx). A group not yet whole has no node.
INSERT INTO log_tiles16 (level, idx, hashes)
SELECT 2 * t.level + 1, t.idx, string_agg(log_subtree_root(substring(t.hashes FROM g * 512 + 1 FOR 512)), ''::bytea ORDER BY g)
FROM log_tiles t, generate_series(0, length(t.hashes) / 512 - 1) AS g
GROUP BY t.level, t.idx;

DROP FUNCTION log_subtree_root(bytea);
DROP TABLE log_tiles;
