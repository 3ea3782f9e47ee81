-- A deleted client's id is kept, and never given to a new client: the
-- registry's rows name their creator by it (created_by, updated_by and the
-- events' actor are the token's sub, the client id), so a new client under
-- an old id would be taken for the author of the old one's rows, and could
-- change them as their owner.
CREATE TABLE deleted_clients (
    client_id  text PRIMARY KEY,
    deleted_at timestamptz NOT NULL
);

---- create above / drop below ----

DROP TABLE deleted_clients;
