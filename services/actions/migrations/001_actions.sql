-- Actions and action documents. Ids are UUIDv7 made by the service, so
-- "ORDER BY id" is creation order. Assets, people, organizations and
-- documents live in other services: their ids are kept here without a
-- foreign key, and kept valid by the reference protocol (pkg/refs).

CREATE TABLE actions (
    id                        uuid PRIMARY KEY,
    asset_id                  uuid NOT NULL,
    action_type               text NOT NULL
        CHECK (action_type IN ('expert_control', 'maintenance', 'pre_use_inspection', 'repair')),
    action_subtype            text,
    performed_at              date NOT NULL,
    person_id                 uuid,
    performed_by_person       text,
    organization_id           uuid,
    performed_by_organization text,
    reference                 text,
    status                    text,
    status_ok                 boolean,
    status_use_ok             boolean,
    status_finalized          boolean,
    status_valid_through      date,
    source_system             text,
    source_reference          text,
    data                      jsonb CHECK (jsonb_typeof(data) = 'object'),
    meta_data                 jsonb CHECK (jsonb_typeof(meta_data) = 'object'),
    created_at                timestamptz NOT NULL DEFAULT now(),
    created_by                text NOT NULL,
    updated_at                timestamptz NOT NULL DEFAULT now(),
    updated_by                text NOT NULL
);

-- Lists are keyset pages in id order. Each equality filter has an index
-- that leads with its column and ends with id, so a page of it, however
-- deep, is one index range scan from (value, cursor). The date ranges
-- cannot lead an index that also yields id order; they are checked inside
-- an index that leads with id, so a page walks index entries from the
-- cursor and reads from the table only the rows that match. The asset,
-- person and organization indexes also answer the reference protocol's
-- question (what names this target?).
CREATE INDEX actions_asset_idx ON actions (asset_id, id);
CREATE INDEX actions_person_idx ON actions (person_id, id) WHERE person_id IS NOT NULL;
CREATE INDEX actions_organization_idx ON actions (organization_id, id) WHERE organization_id IS NOT NULL;
CREATE INDEX actions_type_idx ON actions (action_type, id);
CREATE INDEX actions_status_ok_idx ON actions (status_ok, id) WHERE status_ok IS NOT NULL;
CREATE INDEX actions_status_finalized_idx ON actions (status_finalized, id) WHERE status_finalized IS NOT NULL;
CREATE INDEX actions_source_idx ON actions (source_system, id) WHERE source_system IS NOT NULL;
CREATE INDEX actions_source_reference_idx ON actions (source_system, source_reference, id) WHERE source_system IS NOT NULL;
CREATE INDEX actions_dates_idx ON actions (id, performed_at, status_valid_through);

CREATE TABLE action_documents (
    id               uuid PRIMARY KEY,
    -- An action's action documents go with it.
    action_id        uuid NOT NULL REFERENCES actions (id) ON DELETE CASCADE,
    document_id      uuid NOT NULL,
    source_system    text NOT NULL,
    source_reference text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    created_by       text NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    updated_by       text NOT NULL
);

-- A document is linked to an action once; this index decides between
-- concurrent creates of the same pair.
CREATE UNIQUE INDEX action_documents_pair_key ON action_documents (action_id, document_id);
CREATE INDEX action_documents_document_idx ON action_documents (document_id, id);

---- create above / drop below ----

DROP TABLE action_documents;
DROP TABLE actions;
