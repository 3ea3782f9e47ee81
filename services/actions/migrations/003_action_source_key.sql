-- (source_system, source_reference), when both are given, names one
-- action: an import run again months later finds what it recorded instead
-- of recording it twice (the 24-hour Idempotency-Key cannot). The unique
-- index below decides between concurrent creates of one pair.
--
-- A database from before the key may hold several actions of one pair.
-- The migration must not fail on them, and must not delete or change an
-- inspection record, so the oldest action of each such pair keeps the key
-- and the others are marked source_duplicate: they keep their pair, the
-- index leaves them out, and a find by the pair answers the oldest. An
-- operator lists them with
--   SELECT id, source_system, source_reference FROM actions.actions WHERE source_duplicate
-- and settles each (a DELETE, or a PATCH of its pair) through the API
-- (docs/operations.md). A PATCH that changes a marked action's pair drops
-- the mark: the new pair is held to the key like any other.
ALTER TABLE actions ADD COLUMN source_duplicate boolean NOT NULL DEFAULT false;

UPDATE actions a SET source_duplicate = true
FROM (SELECT id, row_number() OVER (PARTITION BY source_system, source_reference ORDER BY id) AS n
      FROM actions WHERE source_system IS NOT NULL AND source_reference IS NOT NULL) pairs
WHERE a.id = pairs.id AND pairs.n > 1;

CREATE UNIQUE INDEX actions_source_key ON actions (source_system, source_reference)
    WHERE source_system IS NOT NULL AND source_reference IS NOT NULL AND NOT source_duplicate;

---- create above / drop below ----

DROP INDEX actions_source_key;
ALTER TABLE actions DROP COLUMN source_duplicate;
