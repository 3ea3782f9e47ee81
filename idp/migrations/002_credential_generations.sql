-- Every secret carries the generation its tokens are issued under (the
-- token's credential_generation claim). A change that must void the
-- tokens issued before it gives the client's secrets new, higher
-- generations: a rotation by its new secret, once the replaced one expires;
-- a removed scope by renumbering them. The verifiers learn, for each
-- client, the lowest generation of its valid secrets (the token validity
-- list) and refuse tokens of lower ones, and of clients no longer listed.
-- One sequence for every client, so that a client deleted and created
-- again under its id never issues a generation its earlier tokens had.
-- Secrets that exist already get theirs from the sequence here.
CREATE SEQUENCE credential_generation;
ALTER TABLE client_secrets ADD COLUMN generation bigint NOT NULL DEFAULT nextval('credential_generation');

---- create above / drop below ----

ALTER TABLE client_secrets DROP COLUMN generation;
DROP SEQUENCE credential_generation;
