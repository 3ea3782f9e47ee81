-- GET /compliance?as_of=D: the rows as the registry knew them at the end
-- of day D (UTC). An action's row holds only its present version; the
-- versions it replaced or deleted are kept here, each with the span in
-- which the registry knew it: from its write (the row's updated_at) to
-- the write that replaced or deleted it. Only the columns compliance
-- reads are kept. The present version was known from its updated_at on,
-- so at any instant exactly one version of an action (or none) was known.
-- Writes before this migration kept no versions: an as_of before it sees
-- those actions as they are now (or not at all once deleted).
CREATE TABLE action_versions (
    action_id            uuid NOT NULL,
    asset_id             uuid NOT NULL,
    action_type          text NOT NULL,
    performed_at         date NOT NULL,
    status_ok            boolean,
    status_use_ok        boolean,
    status_finalized     boolean,
    status_valid_through date,
    known_from           timestamptz NOT NULL,
    known_until          timestamptz NOT NULL
);

-- The as_of page looks up each asset's latest version of a type known at
-- an instant, as actions_latest_idx does for the present versions.
CREATE INDEX action_versions_latest_idx ON action_versions (asset_id, action_type, performed_at DESC, action_id DESC)
    WHERE status_finalized;

-- In the write's own transaction: now() is the replacing write's
-- updated_at, so the old version's span ends where the new one's begins.
CREATE FUNCTION keep_action_version() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO action_versions VALUES (OLD.id, OLD.asset_id, OLD.action_type, OLD.performed_at, OLD.status_ok,
        OLD.status_use_ok, OLD.status_finalized, OLD.status_valid_through, OLD.updated_at, now());
    RETURN NULL;
END $$;

CREATE TRIGGER actions_versions AFTER UPDATE OR DELETE ON actions
    FOR EACH ROW EXECUTE FUNCTION keep_action_version();

---- create above / drop below ----

DROP TRIGGER actions_versions ON actions;
DROP FUNCTION keep_action_version();
DROP TABLE action_versions;
