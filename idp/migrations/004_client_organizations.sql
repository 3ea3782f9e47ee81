-- A client may belong to one organization of the registry (the operator
-- binds it): its tokens then carry the organization's id in the claim org,
-- and the services show it that organization's equipment. NULL: bound to
-- none, which reads every row. The identity provider knows no
-- organizations, so nothing here checks that the id names one: the
-- operator names an organization that exists.
ALTER TABLE clients ADD COLUMN organization_id uuid;

---- create above / drop below ----

ALTER TABLE clients DROP COLUMN organization_id;
