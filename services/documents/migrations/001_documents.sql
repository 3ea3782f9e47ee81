-- Documents: metadata here, bytes in object storage under the document's
-- id. Ids are UUIDv7 made by the service, so "ORDER BY id" is creation order.

CREATE TABLE documents (
    id            uuid PRIMARY KEY,
    document_type text NOT NULL CHECK (document_type ~ '^[a-z][a-z0-9_]{0,63}$'),
    filename      text,
    content_type  text NOT NULL,
    size          bigint NOT NULL CHECK (size >= 0),
    sha256        text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    created_by    text NOT NULL
);

-- Objects that no committed document row stands for: an upload in
-- progress (remove_after is its deadline) or the object of a deleted
-- document (remove_after is now). A document row and its loose_objects
-- row change in one transaction, so every object is either a document's
-- or listed here; the sweeper removes listed objects whose time is up.
CREATE TABLE loose_objects (
    key          text PRIMARY KEY,
    remove_after timestamptz NOT NULL
);
CREATE INDEX loose_objects_due_idx ON loose_objects (remove_after);

---- create above / drop below ----

DROP TABLE loose_objects;
DROP TABLE documents;
