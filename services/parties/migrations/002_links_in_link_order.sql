---- tern: disable-tx ----
-- The links of an organization and of a person in link order (when made,
-- then the other end's id and the relation type): what the first page
-- embedded in an organization's or a person's answer and the pages of
-- GET /organizations/{id}/people and GET /people/{id}/organizations read
-- as a range, however many links one end has. Built CONCURRENTLY, so a
-- schema with many links keeps taking them while it builds. The first
-- takes the place of 001's index on organization_id alone, which is its
-- prefix.
CREATE INDEX CONCURRENTLY IF NOT EXISTS person_organizations_organization_order_idx
    ON person_organizations (organization_id, created_at, person_id, relation_type);
CREATE INDEX CONCURRENTLY IF NOT EXISTS person_organizations_person_order_idx
    ON person_organizations (person_id, created_at, organization_id, relation_type);
DROP INDEX CONCURRENTLY IF EXISTS person_organizations_organization_idx;

---- create above / drop below ----

CREATE INDEX person_organizations_organization_idx ON person_organizations (organization_id);
DROP INDEX person_organizations_person_order_idx;
DROP INDEX person_organizations_organization_order_idx;
