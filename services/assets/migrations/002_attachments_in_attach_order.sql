---- tern: disable-tx ----
-- An asset type's attachments in attach order: what the first page
-- embedded in its answer and the pages of GET /asset_types/{id}/documents
-- read as a range, however many documents are attached. Built
-- CONCURRENTLY, so a schema with many attachments keeps taking them.
CREATE INDEX CONCURRENTLY IF NOT EXISTS asset_type_documents_attach_order_idx
    ON asset_type_documents (asset_type_id, attached_at, document_id);

---- create above / drop below ----

DROP INDEX asset_type_documents_attach_order_idx;
