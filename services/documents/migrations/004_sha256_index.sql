-- GET /documents?sha256= finds the documents with the same bytes; the
-- index pages through them in id order.
CREATE INDEX documents_sha256_idx ON documents (sha256, id);

---- create above / drop below ----

DROP INDEX documents_sha256_idx;
