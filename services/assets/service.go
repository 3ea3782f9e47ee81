// Package assets is the registry's service for asset types (brand, model,
// version, with their documents and thumbnail: the component assettypes)
// and assets (one piece of equipment each, told apart by serial number
// within its type: this package). Each follows go-kit's layers: Service
// (service.go, plain Go types), endpoints (endpoint.go), HTTP transport
// (transport.go) and PostgreSQL store (store.go); finds are cached in
// Redis (cache.go); spec.go composes them. People and documents belong to
// other services: references to them are kept whole with pkg/refs.
package assets

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/assets/assettypes"
	"github.com/assetregistry/registry/services/assets/custody"
)

// Service is what the assets component does. Errors are *apperr.Error.
type Service interface {
	// Assets, read.
	// Reads answer what by sees (docs/tenancy.md): an asset it
	// does not see is a 404, and absent from lists and finds.
	GetAsset(ctx context.Context, by model.Caller, id uuid.UUID) (Asset, error)
	ListAssets(ctx context.Context, by model.Caller, f AssetFilter, page model.Page) (model.Paged[Asset], error)
	// FindAsset returns the asset matching the criteria; with create it
	// creates one when none matches and reports created=true.
	FindAsset(ctx context.Context, by model.Caller, q AssetQuery, create bool) (a Asset, created bool, err error)
	// Assets, written.
	CreateAsset(ctx context.Context, by model.Caller, in AssetInput) (Asset, error)
	// CreateAssets finds or creates each asset of a batch by its type and
	// serial number (201 created, 200 found), with the responsible people
	// asked about together; errs[i] is item i's decoding error. Each
	// outcome is an item's; the error fails the whole batch.
	CreateAssets(ctx context.Context, by model.Caller, in []AssetInput, errs []error) ([]model.ItemOutcome, error)
	UpdateAsset(ctx context.Context, g model.Guard, id uuid.UUID, p AssetPatch) (Asset, error)
	// UpdateAssets applies each item of a batch as UpdateAsset would, under
	// g with the item's own If-Match; errs[i] is item i's decoding error.
	// Each outcome is an item's (its new ETag, or its error); the error
	// fails the whole batch.
	UpdateAssets(ctx context.Context, g model.Guard, items []model.PatchItem[AssetPatch], errs []error) ([]model.ItemOutcome, error)
	DeleteAsset(ctx context.Context, g model.Guard, id uuid.UUID) error
}

// service holds the rules: what an input must be, how a find matches and
// when it creates, and which references a write makes. It asks the owners
// of those references (refs.Registry.Checking) and hands the store the
// check, which the store confirms under the targets' locks in its

// service holds the rules: what an input must be, how a find matches and
// when it creates, and which references a write makes. It asks the owners
// of those references (refs.Registry.Checking) and hands the store the
// check, which the store confirms under the targets' locks in its
// transaction. A find that creates resolves the brand and model to a type
// through the asset types' store.
type service struct {
	store *Store
	types *assettypes.Store
	refs  *refs.Registry
}

// NewService returns the service over store and the asset types' store,
// asking peers through r (the registry the stores declared their side of
// the reference protocol in).
func NewService(store *Store, types *assettypes.Store, r *refs.Registry) Service {
	return &service{store: store, types: types, refs: r}
}

// personTarget is an asset's reference to its responsible person.
func personTarget(id uuid.UUID) refs.Target {
	return refs.Target{Field: "responsible_person_id", Kind: "person", ID: id}
}

// refsOf are the references in makes: its responsible person and its
// owner organization, if any.
func refsOf(in AssetInput) []refs.Target {
	if id := in.OwnerOrganizationID.Ptr(); id != nil {
		return append(personOf(in), custody.OrganizationTarget(*id))
	}
	return personOf(in)
}

// ownerFor applies the owner rule of a create by by: a bound client's
// asset belongs to its organization, and naming another is a 422; an
// unbound client names any organization (checked as a reference) or none.
func ownerFor(by model.Caller, in AssetInput) (AssetInput, error) {
	if by.Organization == "" {
		return in, nil
	}
	org, err := uuid.Parse(by.Organization)
	if err != nil {
		return in, apperr.Invalid(apperr.FieldError{Field: "owner_organization_id",
			Message: "your client's organization claim is no organization id: ask the operator to bind it again"})
	}
	if named := in.OwnerOrganizationID.Ptr(); named != nil && *named != org {
		return in, apperr.Invalid(apperr.FieldError{Field: "owner_organization_id",
			Message: "must be your client's own organization, " + by.Organization + ", or left out; another organization's asset is handed over by a transfer"})
	}
	in.OwnerOrganizationID = &model.UUID{UUID: org}
	return in, nil
}

// personOf is the reference in makes to a person, if any.
func personOf(in AssetInput) []refs.Target {
	if id := in.ResponsiblePersonID.Ptr(); id != nil {
		return []refs.Target{personTarget(*id)}
	}
	return nil
}

func (s *service) CreateAsset(ctx context.Context, by model.Caller, in AssetInput) (Asset, error) {
	in, err := in.Normalize()
	if err == nil {
		in, err = ownerFor(by, in)
	}
	if err == nil {
		err = s.parentSeen(ctx, by, in.ParentAssetID)
	}
	if err != nil {
		return Asset{}, err
	}
	a, err := refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (Asset, error) {
		return s.store.CreateAsset(ctx, by, in, checked)
	})
	return a, s.hideUnseen(ctx, by, err)
}

// hideUnseen turns a 409 duplicate naming an asset by does not see (an
// external id another organization's asset holds, a serial number a patch
// moves onto one) into the 409 asset-not-visible, which names nothing.
func (s *service) hideUnseen(ctx context.Context, by model.Caller, err error) error {
	var e *apperr.Error
	if by.Organization == "" || !errors.As(err, &e) || e.Code != "duplicate" {
		return err
	}
	existing, _ := e.Extensions["existing_id"].(string)
	id, perr := uuid.Parse(existing)
	if perr != nil {
		return err
	}
	acc, aerr := s.store.Access(ctx, id)
	if aerr == nil && acc.Sees(by) {
		return err
	}
	return apperr.AssetNotVisible("an asset your organization does not see holds this serial number or external id already; " +
		"ask its owner for a grant or a transfer")
}

// CreateAssets asks about the responsible people of the whole batch
// together, once, before the store's transaction; an owner that cannot
// answer fails the batch, a person that does not exist only its items.
func (s *service) CreateAssets(ctx context.Context, by model.Caller, in []AssetInput, errs []error) ([]model.ItemOutcome, error) {
	out := make([]model.ItemOutcome, len(in))
	var all []refs.Target
	pending := 0
	for i := range in {
		if out[i].Err = errs[i]; out[i].Err == nil {
			in[i], out[i].Err = in[i].Normalize()
		}
		if out[i].Err == nil {
			in[i], out[i].Err = ownerFor(by, in[i])
		}
		if out[i].Err == nil {
			out[i].Err = s.parentSeen(ctx, by, in[i].ParentAssetID)
		}
		if out[i].Err == nil {
			all = append(all, refsOf(in[i])...)
			pending++
		}
	}
	if pending == 0 {
		return out, nil
	}
	checked, err := s.refs.Ask(ctx, all...)
	if err != nil {
		return out, err
	}
	if err := s.refs.CheckingFrom(ctx, checked, func(checked *refs.Checked) error {
		return s.store.CreateAssets(ctx, by, in, out, checked)
	}); err != nil {
		return out, err
	}
	for i := range out {
		out[i].Err = s.hideUnseen(ctx, by, out[i].Err)
	}
	return out, nil
}

// FindAsset matches the serial number exactly, in the types of the brand
// and model (and version; any version without one) or, without them, in
// every type, so several assets can match: a 409 listing them. With create
// and no match, the asset is created in the one type the criteria name: a
// type that does not exist is a 422, several versions of it a 409 listing
// them. Concurrent identical calls create one asset.
func (s *service) FindAsset(ctx context.Context, by model.Caller, q AssetQuery, create bool) (Asset, bool, error) {
	q, err := q.Normalize()
	if err != nil {
		return Asset{}, false, err
	}
	matches, err := s.store.FindAssets(ctx, q, model.FindLimit, by.Organization)
	if err != nil {
		return Asset{}, false, err
	}
	if len(matches) > 0 || !create {
		a, err := model.FindOne(matches, "asset", func(a Asset) any {
			return map[string]any{"id": a.ID, "serial_number": a.SerialNumber, "asset_type_id": a.AssetTypeID}
		})
		return a, false, err
	}
	if !q.NamesType() {
		var v apperr.Validation
		v.Add("brand", "is required to create an asset: no asset has this serial number")
		v.Add("model", "is required to create an asset: no asset has this serial number")
		return Asset{}, false, v.Err()
	}
	types, err := s.types.FindAssetTypes(ctx, q.typeCriteria())
	if err != nil {
		return Asset{}, false, err
	}
	if len(types) == 0 {
		var v apperr.Validation
		for _, field := range q.typeFields() {
			v.Add(field, "must name an existing asset type with the other criteria; no asset type matches them")
		}
		return Asset{}, false, v.Err()
	}
	t, err := model.FindOne(types, "asset type", func(t assettypes.AssetType) any {
		return map[string]any{"id": t.ID, "brand": t.Brand, "model": t.Model, "version": t.Version}
	})
	if err != nil {
		return Asset{}, false, err
	}
	// Another caller may create it between our find and our insert; the
	// insert then returns theirs (created=false), or a 409 when by does
	// not see it. It names no person; a bound caller's asset names its
	// organization as owner.
	in, err := ownerFor(by, AssetInput{SerialNumber: q.SerialNumber, AssetTypeID: model.ID(t.ID), ExternalIDs: []assettypes.ExternalID{}})
	if err != nil {
		return Asset{}, false, err
	}
	var created bool
	a, err := refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (Asset, error) {
		a, made, err := s.store.CreateAssetIfAbsent(ctx, by, in, checked)
		created = made
		return a, err
	})
	return a, created, err
}

// UpdateAsset applies the patch under the rules of mayChange; only an
// admin changes the owner organization (a 422 on the field for anyone
// else), so a transfer is the way an asset changes hands. A patch that
// names a parent takes its turn among the parent moves (Store.Moving),
// whose cycle check holds only then; one that removes the parent, or
// leaves it, needs none.
func (s *service) UpdateAsset(ctx context.Context, g model.Guard, id uuid.UUID, p AssetPatch) (Asset, error) {
	g, owner, err := s.mayChange(ctx, g, id)
	if err == nil && p.ParentAssetID.Set && !p.ParentAssetID.Null {
		err = s.parentSeen(ctx, g.Caller, &p.ParentAssetID.Value)
	}
	if err != nil {
		return Asset{}, err
	}
	apply := func(a Asset) (AssetInput, error) {
		if !equalIDs(a.OwnerOrganizationID, owner) {
			// Handed over since mayChange read it: what the caller may do
			// has changed.
			return AssetInput{}, apperr.Conflict("asset " + id.String() + " changed hands while it was being updated; read it again")
		}
		in, err := p.Apply(a)
		if err == nil && !g.Admin && !equalIDs(in.OwnerOrganizationID.Ptr(), a.OwnerOrganizationID) {
			err = apperr.Invalid(apperr.FieldError{Field: "owner_organization_id",
				Message: "changes only by a transfer (POST /assets/{id}/transfers) or by a client with registry:admin"})
		}
		return in, err
	}
	// The owners are asked outside the parent moves' transaction, which
	// is undone with the update's when they must be asked.
	moving := p.ParentAssetID.Set && !p.ParentAssetID.Null
	err = s.refs.Checking(ctx, func(checked *refs.Checked) error {
		update := func(ctx context.Context) error { return s.store.UpdateAsset(ctx, g, id, apply, checked) }
		if moving {
			return s.store.Moving(ctx, update)
		}
		return update(ctx)
	})
	if err != nil {
		return Asset{}, s.hideUnseen(ctx, g.Caller, err)
	}
	return s.store.GetAsset(ctx, id)
}

// UpdateAssets applies the items in one transaction, each in a savepoint
// of its own (store.UpdateBatch), so an item refused (404, 403, 412, 422,
// 409) changes nothing and leaves the others; a later item sees what an
// earlier one changed. A batch that moves any asset under a parent takes
// the parent moves' turn first, for the whole batch, so its row locks are
// never taken before that lock (as a single move takes them).
func (s *service) UpdateAssets(ctx context.Context, g model.Guard, items []model.PatchItem[AssetPatch], errs []error) ([]model.ItemOutcome, error) {
	moves := false
	for i, item := range items {
		moves = moves || errs[i] == nil && item.Patch.ParentAssetID.Set && !item.Patch.ParentAssetID.Null
	}
	var out []model.ItemOutcome
	update := func(ctx context.Context) (err error) {
		out, err = store.UpdateBatch(ctx, s.store.Store, g, items, errs, s.UpdateAsset)
		return err
	}
	err := s.store.Together(ctx, func(ctx context.Context) error {
		if moves {
			return s.store.Moving(ctx, update)
		}
		return update(ctx)
	})
	return out, err
}

// parentSeen holds a parent_asset_id to the assets the caller sees
// (model.Access): a parent it does not see is a 422 as one that does not
// exist. The store checks existence again, under its lock, in the write.
func (s *service) parentSeen(ctx context.Context, by model.Caller, parent *model.UUID) error {
	if parent == nil {
		return nil
	}
	acc, err := s.store.Access(ctx, parent.UUID)
	if apperr.Is(err, apperr.KindNotFound) || err == nil && !acc.Sees(by) {
		return parentMissing(parent.UUID)
	}
	return err
}

// mayChange is who may change or delete an asset: nobody changes what
// they do not see (404); its creator, an admin, and any client of its
// owner organization may (the owner rule of the route, widened to the
// owner's clients). It returns the guard the store applies, and the owner
// it read.
func (s *service) mayChange(ctx context.Context, g model.Guard, id uuid.UUID) (model.Guard, *uuid.UUID, error) {
	acc, err := s.store.Access(ctx, id)
	if err != nil {
		return g, nil, err
	}
	if !acc.Sees(g.Caller) {
		return g, nil, apperr.NotFound("asset", id.String())
	}
	var owner *uuid.UUID
	if acc.OwnerOrganizationID != "" {
		id := uuid.MustParse(acc.OwnerOrganizationID)
		owner = &id
		if g.Organization == acc.OwnerOrganizationID {
			g.OwnerOnly = false
		}
	}
	return g, owner, nil
}

// GetAsset answers an asset by sees; any other is a 404, as one that
// does not exist. The rule is the query's, as a list's is: a bound
// caller's read costs no second query for the asset's access.
func (s *service) GetAsset(ctx context.Context, by model.Caller, id uuid.UUID) (Asset, error) {
	return s.store.GetAssetSeenBy(ctx, id, by.Organization)
}

// ListAssets lists what by sees, filtered in the query.
func (s *service) ListAssets(ctx context.Context, by model.Caller, f AssetFilter, page model.Page) (model.Paged[Asset], error) {
	f.VisibleTo = by.Organization
	return s.store.ListAssets(ctx, f, page)
}

// DeleteAsset removes an asset unless something in another service (an
// action) still names it, as an asset type's delete does, under the rules
// of mayChange.
func (s *service) DeleteAsset(ctx context.Context, g model.Guard, id uuid.UUID) error {
	g, _, err := s.mayChange(ctx, g, id)
	if err != nil {
		return err
	}
	current := func(ctx context.Context) (any, error) { return s.store.GetAsset(ctx, id) }
	return s.refs.DeleteRow(ctx, g, "asset", "assets", id, current, s.store.DeleteAsset(g.Caller, id))
}
