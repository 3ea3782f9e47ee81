-- Where in the stream the feed has stored up to, per consumer, written in
-- the transaction that stores the events. A replica that takes over the
-- consuming starts right after it, so a resource's events are stored in
-- the stream's order even when the previous leader stopped holding
-- messages it had read but not stored (a durable consumer would hand
-- those back only after its ack wait, behind later ones).
CREATE TABLE stream_position (
    consumer   text PRIMARY KEY,
    stream     text NOT NULL,
    stream_seq bigint NOT NULL
);

---- create above / drop below ----

DROP TABLE stream_position;
