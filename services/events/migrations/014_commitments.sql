-- Personal fields enter the log as salted commitments (leaf format 2) from
-- this upgrade on. commitments_from is the first leaf an event can take
-- after it: the log's size, after the events stored before the log
-- existed, which take their leaves first. An event at a leaf before it was
-- logged as served (format 1), and its redaction is audited as before; an
-- event from it on keeps the leaf its stored bytes derive, and no
-- redaction stands in for it.
ALTER TABLE log_state ADD COLUMN commitments_from bigint NOT NULL DEFAULT 0;
UPDATE log_state SET commitments_from = size + (SELECT count(*) FROM events WHERE leaf IS NULL);
