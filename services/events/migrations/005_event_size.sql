-- Each event's size as stored (its body's bytes), written with the event,
-- so a page of the feed or of a history can stop before the event that
-- would take it past its byte bound without reading the bodies it leaves
-- out (the size of a json value is only known by reading it whole).
-- Events stored before this have none; their size is measured when read.
ALTER TABLE events ADD COLUMN size integer;

---- create above / drop below ----

ALTER TABLE events DROP COLUMN size;
