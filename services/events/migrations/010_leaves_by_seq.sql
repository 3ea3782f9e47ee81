-- An event's leaf is found through the feed's seq, not through an index
-- of the leaves. Leaves are numbered in the feed's order under the feed's
-- lock (StoreFromStream, Backfill), so the leaf grows with the seq: the
-- events of a range of leaves are a range of seqs, and its bounds are
-- found by bisecting the seqs, one probe of the primary key each (about
-- 30 in a feed of a billion events). The index cost every stored event an
-- entry, the largest part of what the log added to the consumer's insert
-- (docs/performance.md); what reads events by leaf (an entry, the
-- audit, the backfill) is rare beside that.

-- log_seq_from is the first seq, in the feed's order, whose event has
-- leaf target or a later one (an event without a leaf yet counts as later
-- than every leaf); NULL when there is none. A leaf that is a redaction's
-- entry, or whose event was pruned, has no event: the answer is then the
-- next event's seq.
CREATE FUNCTION log_seq_from(target bigint) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
DECLARE
    lo bigint;
    hi bigint;
    mid bigint;
    probe_seq bigint;
    probe_leaf bigint;
BEGIN
    SELECT seq, leaf INTO hi, probe_leaf FROM events ORDER BY seq DESC LIMIT 1;
    IF hi IS NULL OR probe_leaf < target THEN
        RETURN NULL;
    END IF;
    SELECT seq INTO lo FROM events ORDER BY seq LIMIT 1;
    -- The first event at or after seq hi qualifies; none before seq lo is
    -- the answer. Each probe halves [lo, hi].
    WHILE lo < hi LOOP
        mid := lo + (hi - lo) / 2;
        SELECT seq, leaf INTO probe_seq, probe_leaf FROM events WHERE seq >= mid ORDER BY seq LIMIT 1;
        IF probe_leaf IS NULL OR probe_leaf >= target THEN
            hi := mid;
        ELSE
            lo := probe_seq + 1;
        END IF;
    END LOOP;
    SELECT seq INTO probe_seq FROM events WHERE seq >= lo ORDER BY seq LIMIT 1;
    RETURN probe_seq;
END $$;

-- A catalogue change: the index goes from every partition at once (an
-- index of a partitioned table cannot be dropped CONCURRENTLY), under a
-- lock the feed's readers and writers wait for only as long as that.
SET LOCAL lock_timeout = '2s';
DROP INDEX events_by_leaf;

---- create above / drop below ----

CREATE INDEX events_by_leaf ON events (leaf);
DROP FUNCTION log_seq_from(bigint);
