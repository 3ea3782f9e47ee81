-- The organization of the client that uploaded a document (the token's
-- organization claim), so that its organization's other clients see it
-- before any action links it (docs/api.md, "Tenancy"). Null: uploaded by a
-- client bound to no organization, or before tenancy.
ALTER TABLE documents ADD COLUMN created_by_organization uuid;

---- create above / drop below ----

ALTER TABLE documents DROP COLUMN created_by_organization;
