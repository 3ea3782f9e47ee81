-- Events the relay sets aside (see pkg/outbox, setaside.go): one NATS
-- refuses for good (too large), and the later events of its subject, so
-- that they keep their order. They wait, unpublished, for an operator's
-- replay, which clears the mark; the relay reads only the rows without
-- one, so they stop no other subject's events. The indexes that read
-- them are built concurrently in 007 (the outbox may be large when it
-- keeps published events, outbox.retention).
ALTER TABLE outbox ADD COLUMN set_aside_at timestamptz, ADD COLUMN set_aside_reason text;

---- create above / drop below ----

ALTER TABLE outbox DROP COLUMN set_aside_reason, DROP COLUMN set_aside_at;
