-- What this service has learnt from the owners of the things it points at
-- (see pkg/refs): a target an owner said exists is remembered as alive,
-- so the next write naming it need not ask again. Every owner's delete asks
-- this service what points at the target before deleting it, and that
-- question first marks the row not alive (a new version) in a committed
-- transaction of its own, so a remembered answer never outlives the start
-- of a delete that could succeed. version comes from one sequence and
-- never repeats: a writer that read a row before asking an owner trusts
-- the answer only if the row's version is the same after it took the
-- target's lock (0 stands for no row).
CREATE SEQUENCE ref_targets_version;
CREATE TABLE ref_targets (
    kind       text NOT NULL,
    id         uuid NOT NULL,
    alive      boolean NOT NULL,
    attrs      jsonb,
    version    bigint NOT NULL DEFAULT nextval('ref_targets_version'),
    changed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, id)
);

---- create above / drop below ----

DROP TABLE ref_targets;
DROP SEQUENCE ref_targets_version;
