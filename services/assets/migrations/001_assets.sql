-- Asset types, assets, their external identifiers and the documents asset
-- types attach. Ids are UUIDv7 made by the service, so "ORDER BY id" is
-- creation order. Persons and documents live in other services: their ids
-- are kept here without a foreign key, and kept valid by the reference
-- protocol (pkg/refs).

CREATE TABLE asset_types (
    id                    uuid PRIMARY KEY,
    brand                 text NOT NULL,
    model                 text NOT NULL,
    version               text,
    -- Case-folded brand, model and version, computed by the service
    -- (validate.Fold, not lower()), so that identity does not depend on the
    -- database's locale.
    brand_key             text NOT NULL,
    model_key             text NOT NULL,
    version_key           text,
    emission_class        text,
    thumbnail_document_id uuid,
    -- The thumbnail's metadata as the documents service told it; documents
    -- never change.
    thumbnail             jsonb,
    created_at            timestamptz NOT NULL DEFAULT now(),
    created_by            text NOT NULL,
    updated_at            timestamptz NOT NULL DEFAULT now(),
    updated_by            text NOT NULL,
    CHECK ((thumbnail_document_id IS NULL) = (thumbnail IS NULL)),
    CHECK ((version IS NULL) = (version_key IS NULL))
);

-- An asset type's identity: one type per brand, model and version (none
-- being one version too), compared case-insensitively.
CREATE UNIQUE INDEX asset_types_identity_key
    ON asset_types (brand_key, model_key, version_key) NULLS NOT DISTINCT;
CREATE INDEX asset_types_model_idx ON asset_types (model_key, id);
CREATE INDEX asset_types_thumbnail_idx ON asset_types (thumbnail_document_id) WHERE thumbnail_document_id IS NOT NULL;

CREATE TABLE asset_type_documents (
    asset_type_id uuid NOT NULL REFERENCES asset_types (id) ON DELETE CASCADE,
    document_id   uuid NOT NULL,
    document      jsonb NOT NULL, -- the document's metadata, as for thumbnail
    attached_at   timestamptz NOT NULL DEFAULT now(),
    attached_by   text NOT NULL,
    PRIMARY KEY (asset_type_id, document_id)
);
CREATE INDEX asset_type_documents_document_idx ON asset_type_documents (document_id);

CREATE TABLE assets (
    id                    uuid PRIMARY KEY,
    -- No cascade: deleting a type that has assets is refused (409).
    asset_type_id         uuid NOT NULL REFERENCES asset_types (id),
    serial_number         text NOT NULL,
    production_year       integer CHECK (production_year >= 1900),
    status                text,
    responsible_person_id uuid,
    created_at            timestamptz NOT NULL DEFAULT now(),
    created_by            text NOT NULL,
    updated_at            timestamptz NOT NULL DEFAULT now(),
    updated_by            text NOT NULL
);

-- An asset's identity: this index is what makes fifty concurrent
-- find-or-create calls create exactly one asset.
CREATE UNIQUE INDEX assets_identity_key ON assets (asset_type_id, serial_number);
CREATE INDEX assets_type_idx ON assets (asset_type_id, id);
CREATE INDEX assets_serial_number_idx ON assets (serial_number, id);
CREATE INDEX assets_responsible_person_idx ON assets (responsible_person_id, id) WHERE responsible_person_id IS NOT NULL;

-- External identifiers: a (source_system, external_id) pair names one
-- asset type and one asset at most. position keeps the client's order.
CREATE TABLE asset_type_external_ids (
    source_system text NOT NULL,
    external_id   text NOT NULL,
    asset_type_id uuid NOT NULL REFERENCES asset_types (id) ON DELETE CASCADE,
    position      integer NOT NULL,
    PRIMARY KEY (source_system, external_id)
);
CREATE INDEX asset_type_external_ids_owner_idx ON asset_type_external_ids (asset_type_id);

CREATE TABLE asset_external_ids (
    source_system text NOT NULL,
    external_id   text NOT NULL,
    asset_id      uuid NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    position      integer NOT NULL,
    PRIMARY KEY (source_system, external_id)
);
CREATE INDEX asset_external_ids_owner_idx ON asset_external_ids (asset_id);

---- create above / drop below ----

DROP TABLE asset_external_ids;
DROP TABLE asset_type_external_ids;
DROP TABLE assets;
DROP TABLE asset_type_documents;
DROP TABLE asset_types;
