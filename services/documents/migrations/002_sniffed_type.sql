-- What the service itself found the file to be from its first bytes
-- (http.DetectContentType), whatever the uploader declared: a thumbnail
-- must be a raster image by this, not by its declared content type.
-- Documents stored before it was measured have none ('').
ALTER TABLE documents ADD COLUMN sniffed_type text NOT NULL DEFAULT '';

---- create above / drop below ----

ALTER TABLE documents DROP COLUMN sniffed_type;
