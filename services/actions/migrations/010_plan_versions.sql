-- Plans as they were: GET /compliance?as_of=D computes with the plans the
-- registry knew at the end of day D. A plan's row holds its present
-- version; each version a change replaced or a delete removed is kept
-- here, in the transaction of that change, with the span the registry
-- knew it in: from its write (the row's updated_at) to the change's. The
-- present version was known from its updated_at on. Changes before this
-- migration kept no versions: an as_of before it sees those plans as they
-- are now (or not at all once deleted).
CREATE TABLE plan_versions (
    plan_id         uuid NOT NULL,
    action_type     text NOT NULL,
    asset_type_id   uuid,
    asset_id        uuid,
    interval_period text NOT NULL,
    first_due_after text NOT NULL,
    due_soon        text NOT NULL,
    known_from      timestamptz NOT NULL,
    known_until     timestamptz NOT NULL
);

CREATE INDEX plan_versions_type_idx ON plan_versions (action_type, known_until);

-- The old row's columns by name, so that a column both tables gain later
-- is kept without changing the function.
CREATE FUNCTION keep_plan_version() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO plan_versions SELECT * FROM jsonb_populate_record(NULL::plan_versions,
        to_jsonb(OLD) || jsonb_build_object('plan_id', OLD.id, 'known_from', OLD.updated_at, 'known_until', now()));
    RETURN NULL;
END $$;

CREATE TRIGGER inspection_plans_versions AFTER UPDATE OR DELETE ON inspection_plans
    FOR EACH ROW EXECUTE FUNCTION keep_plan_version();

---- create above / drop below ----

-- CASCADE: the trigger goes with its function.
DROP FUNCTION keep_plan_version() CASCADE;
DROP TABLE plan_versions;
