-- compliance.updated events: a row's state change, by a write or by the
-- calendar, announced exactly once (docs/architecture.md, the compliance
-- read model).
--
-- compliance_announced: each row's state as the last event said it (a
-- row without one was never announced: it is "never", as every new
-- asset's rows are). The roller compares what the rows are now with it,
-- and writes the outbox rows of the differences and the new announced
-- rows in one transaction: a roller killed at any point has announced a
-- difference wholly or not at all, and the next one finds what is left.
CREATE TABLE compliance_announced (
    asset_id    uuid NOT NULL,
    action_type text COLLATE "C" NOT NULL,
    state       text NOT NULL,
    -- The row as the event's data showed it: the next event's "before".
    row         jsonb NOT NULL,
    PRIMARY KEY (asset_id, action_type)
);

-- compliance_dirty: the assets whose rows a write may have changed,
-- queued by triggers in the write's own transaction (an action's latest
-- row, an asset's projection row); the roller announces them within a
-- second or so and removes them in the same transaction. An action
-- write's own event (its outbox row) names the writer: the transition
-- it causes carries the same actor and request id. Without one (the
-- projection of an asset's event, a rebuild) they stay NULL and the
-- registry is the actor.
--
-- A queue that only grows between two takes, with no key on the asset:
-- a trigger's insert never waits for another transaction's (concurrent
-- batches queue the same assets in different orders; with one row per
-- asset they waited for each other and deadlocked). The roller takes
-- the oldest entries and announces each asset once.
CREATE TABLE compliance_dirty (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    asset_id   uuid NOT NULL,
    actor      text,
    request_id text
);

-- The functions keep the schema they were made in (SET search_path FROM
-- CURRENT): a session of another search_path writing these tables (an
-- operator's psql) queues in this schema's tables all the same.
CREATE FUNCTION compliance_dirty_latest() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO compliance_dirty (asset_id) VALUES (OLD.asset_id);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO compliance_dirty (asset_id) VALUES (NEW.asset_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER latest_actions_dirty AFTER INSERT OR UPDATE OR DELETE ON latest_actions
    FOR EACH ROW EXECUTE FUNCTION compliance_dirty_latest();
CREATE TRIGGER known_assets_dirty AFTER INSERT OR UPDATE OR DELETE ON known_assets
    FOR EACH ROW EXECUTE FUNCTION compliance_dirty_latest();

-- An action's event is inserted in its write's transaction, after the
-- write itself (pkg/outbox defers it to the commit's round trip): the
-- last action write of the asset before the roller takes it names it.
CREATE FUNCTION compliance_dirty_writer() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO compliance_dirty (asset_id, actor, request_id) VALUES ((NEW.data->>'asset_id')::uuid, NEW.actor, NEW.request_id);
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_compliance_writer AFTER INSERT ON outbox
    FOR EACH ROW WHEN (NEW.kind = 'action') EXECUTE FUNCTION compliance_dirty_writer();

-- compliance_roll: the roller's progress through a pass over every asset
-- (a new day in its zone, or a plan changed): the day the last whole pass
-- was for, the pass under way's day and the last asset it announced. A
-- batch updates it in the transaction of the outbox rows it writes.
CREATE TABLE compliance_roll (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    rolled_for  date,
    pass_for    date,
    pass_after  uuid,
    -- A plan changed since the pass began: another pass follows.
    plans_changed boolean NOT NULL DEFAULT false
);
INSERT INTO compliance_roll DEFAULT VALUES;

CREATE FUNCTION compliance_plans_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE compliance_roll SET plans_changed = true;
    RETURN NULL;
END $$;

CREATE TRIGGER inspection_plans_changed AFTER INSERT OR UPDATE OR DELETE ON inspection_plans
    FOR EACH STATEMENT EXECUTE FUNCTION compliance_plans_changed();

---- create above / drop below ----

DROP TRIGGER inspection_plans_changed ON inspection_plans;
DROP FUNCTION compliance_plans_changed();
DROP TABLE compliance_roll;
DROP TRIGGER outbox_compliance_writer ON outbox;
DROP FUNCTION compliance_dirty_writer();
DROP TRIGGER known_assets_dirty ON known_assets;
DROP TRIGGER latest_actions_dirty ON latest_actions;
DROP FUNCTION compliance_dirty_latest();
DROP TABLE compliance_dirty;
DROP TABLE compliance_announced;
