-- Organizations, people and the links between them.
-- Ids are UUIDv7 made by the service, so "ORDER BY id" is creation order.

CREATE TABLE organizations (
    id                      uuid PRIMARY KEY,
    name                    text NOT NULL,
    registration_number     text NOT NULL,
    organization_type       text NOT NULL
        CHECK (organization_type IN ('private', 'public', 'non_profit', 'governmental', 'unclassified')),
    tax_registration_number text,
    country                 text CHECK (country ~ '^[a-z]{2}$'),
    idp_id                  text,
    created_at              timestamptz NOT NULL DEFAULT now(),
    created_by              text NOT NULL,
    updated_at              timestamptz NOT NULL DEFAULT now(),
    updated_by              text NOT NULL
);

-- The natural key. An organization without a country is still unique by
-- its number among those without a country.
CREATE UNIQUE INDEX organizations_registration_key
    ON organizations (registration_number, country) NULLS NOT DISTINCT;
CREATE INDEX organizations_country_idx ON organizations (country, id);
CREATE INDEX organizations_type_idx ON organizations (organization_type, id);

CREATE TABLE people (
    id             uuid PRIMARY KEY,
    first_name     text NOT NULL,
    last_name      text NOT NULL,
    -- Case-folded names, computed by the service (not lower()), so that
    -- identity does not depend on the database's locale.
    first_name_key text NOT NULL,
    last_name_key  text NOT NULL,
    date_of_birth  date,
    created_at     timestamptz NOT NULL DEFAULT now(),
    created_by     text NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    updated_by     text NOT NULL
);

-- A person's identity: this index is what makes fifty concurrent
-- find-or-create calls create exactly one person.
CREATE UNIQUE INDEX people_identity_key
    ON people (first_name_key, last_name_key, date_of_birth) NULLS NOT DISTINCT;
CREATE INDEX people_last_name_idx ON people (last_name_key, id);
CREATE INDEX people_date_of_birth_idx ON people (date_of_birth, id);

CREATE TABLE person_organizations (
    person_id       uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    relation_type   text NOT NULL CHECK (relation_type ~ '^[a-z][a-z0-9_]{0,63}$'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      text NOT NULL,
    PRIMARY KEY (person_id, organization_id, relation_type)
);
CREATE INDEX person_organizations_organization_idx ON person_organizations (organization_id);

---- create above / drop below ----

DROP TABLE person_organizations;
DROP TABLE people;
DROP TABLE organizations;
