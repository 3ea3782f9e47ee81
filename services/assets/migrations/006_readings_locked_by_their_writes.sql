-- A meter reading's asset is held by the write that records it, not by a
-- foreign key. The key checked its asset once per row (a trigger running
-- a query for each of a batch's 1,000 readings: a twentieth of the CPU a
-- batch costs the whole registry), and every write of readings already
-- takes the asset's key-share lock first, once, which is what that check
-- took: the asset cannot be deleted while the readings are written, and a
-- reading of an asset deleted before finds none (404). Deleting an asset
-- deletes its readings in the same transaction (the store's DeleteAsset),
-- as the key's ON DELETE CASCADE did.
ALTER TABLE meter_readings DROP CONSTRAINT meter_readings_asset_id_fkey;

---- create above / drop below ----

DELETE FROM meter_readings r WHERE NOT EXISTS (SELECT FROM assets a WHERE a.id = r.asset_id);
ALTER TABLE meter_readings ADD CONSTRAINT meter_readings_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES assets (id) ON DELETE CASCADE;
