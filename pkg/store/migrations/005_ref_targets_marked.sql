---- tern: disable-tx ----
-- The rows of deleted targets, oldest mark first: what the maintenance
-- task that forgets them walks (pkg/refs, forget.go). Built CONCURRENTLY,
-- so a schema that already remembers millions of targets keeps taking
-- writes while it builds.
CREATE INDEX CONCURRENTLY IF NOT EXISTS ref_targets_marked ON ref_targets (changed_at) WHERE NOT alive;

---- create above / drop below ----

DROP INDEX ref_targets_marked;
