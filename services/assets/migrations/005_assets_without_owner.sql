---- tern: disable-tx ----
-- The assets without owner, in id order: every bound client sees them, and
-- its page of assets walks them beside the range of its own (the owner
-- index) and of its grants, each in id order up to the page's end.
-- Without this index that walk read every asset from the cursor on.
--
-- Outside a transaction, for an index on a table as large as the assets:
-- the statement stands alone and may run again after a failed attempt.
CREATE INDEX CONCURRENTLY IF NOT EXISTS assets_without_owner_idx ON assets (id) WHERE owner_organization_id IS NULL;

---- create above / drop below ----

DROP INDEX IF EXISTS assets_without_owner_idx;
