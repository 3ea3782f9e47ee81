-- Action types: the interface's four (builtin) and those an admin adds.
-- An action's or a plan's action_type must be one of them; the service
-- checks it (types are never deleted, so a type once seen stays valid),
-- so the columns' closed lists go.
CREATE TABLE action_types (
    -- Not in the API: the order types were added in, for keyset pages
    -- (the four come first, with the smallest ids).
    id          uuid NOT NULL UNIQUE,
    name        text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{1,63}$'),
    description text,
    builtin     boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    created_by  text NOT NULL
);

INSERT INTO action_types (id, name, description, builtin, created_by) VALUES
    ('00000000-0000-7000-8000-000000000001', 'expert_control', 'Expert Control: an inspection by an expert or an authorized body.', true, 'registry'),
    ('00000000-0000-7000-8000-000000000002', 'maintenance', 'Maintenance: scheduled or preventive work that keeps the asset in service.', true, 'registry'),
    ('00000000-0000-7000-8000-000000000003', 'pre_use_inspection', 'Pre-use Inspection: the check made before the asset is used.', true, 'registry'),
    ('00000000-0000-7000-8000-000000000004', 'repair', 'Repair: work that puts a defect right.', true, 'registry');

-- The closed lists of action_type on actions (and its partitions, which
-- inherit it) and on inspection plans: parents first, then what a
-- partition still holds as its own.
DO $$
DECLARE
    c record;
BEGIN
    -- This schema's constraints first, materialized, and only then their
    -- text: the planner may otherwise read the text of constraints in
    -- other schemas, and one of a table another session is dropping
    -- fails the migration (could not open relation with OID).
    FOR c IN WITH mine AS MATERIALIZED (
            SELECT con.oid, con.conrelid, con.conname, con.coninhcount, t.relname
            FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid
            WHERE t.relnamespace = current_schema()::regnamespace AND con.contype = 'c')
        SELECT conrelid::regclass AS tbl, conname FROM mine
        WHERE pg_get_constraintdef(oid) LIKE '%expert_control%'
        ORDER BY coninhcount, relname
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT IF EXISTS %I', c.tbl, c.conname);
    END LOOP;
END $$;

---- create above / drop below ----

DROP TABLE action_types;
