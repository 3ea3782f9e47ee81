// Package custody is the assets service's component for who holds an
// asset and who else may see it (docs/tenancy.md): the grants an
// owner organization gives others (read, inspect), the transfers that hand
// an asset to another organization, an admin's change of owners in bulk,
// and the access change log the other services follow to keep their copy
// of who sees what (the internal /internal/asset_access routes). Who sees
// and who manages an asset is model.Access's rule; this package applies
// it. Its layers are go-kit's, as every component's: Service (this file),
// endpoints (endpoint.go), HTTP transport (transport.go) and PostgreSQL
// store (store.go).
package custody

import (
	"context"
	"fmt"
	"slices"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/google/uuid"
)

// Service is what the custody component does. Errors are *apperr.Error.
type Service interface {
	// Grants.
	PutGrant(ctx context.Context, by model.Caller, assetID uuid.UUID, in GrantInput) (g Grant, created bool, err error)
	ListGrants(ctx context.Context, by model.Caller, assetID uuid.UUID) ([]Grant, error)
	// DeleteGrant obeys the route's If-Match (the grant as the list shows
	// it).
	DeleteGrant(ctx context.Context, g model.Guard, assetID, organizationID uuid.UUID) error
	// Transfers.
	CreateTransfer(ctx context.Context, by model.Caller, assetID uuid.UUID, in TransferInput) (Transfer, error)
	GetTransfer(ctx context.Context, by model.Caller, id uuid.UUID) (Transfer, error)
	ListTransfers(ctx context.Context, by model.Caller, f TransferFilter, page model.Page) (model.Paged[Transfer], error)
	MoveTransfer(ctx context.Context, by model.Caller, id uuid.UUID, move Move) (Transfer, error)
	// SetOwners is an admin's change of the owner of many assets (the
	// route is admin-only).
	SetOwners(ctx context.Context, by model.Caller, in OwnersInput) (OwnersResult, error)
	// The internal access API: the change log after a version, and the
	// current access of assets.
	AccessChanges(ctx context.Context, after int64, limit int) (AccessChanges, error)
	LookupAccess(ctx context.Context, in LookupInput) (Lookup, error)
}

// service holds the rules: who may manage an asset's grants and hand it
// over (model.Access.ManagesAsset), which side moves a transfer, and what
// an organization named in a body must be. It asks the parties service
// whether an organization exists (pkg/refs) and hands the store the check
// and its decision, which the store applies to the rows it locked.
type service struct {
	store *Store
	refs  *refs.Registry
}

// NewService returns the service over store, asking peers through the
// registry.
func NewService(store *Store, r *refs.Registry) Service { return &service{store: store, refs: r} }

// manages is the rule for changing an asset's grants or handing it over:
// a caller that does not see the asset is told it does not exist; an
// asset without owner has nothing to grant or hand over (a 422 on field,
// the organization the body names, saying so); only the owner's clients
// and an admin manage it (403 not-owner).
func manages(by model.Caller, acc model.Access, what, field string) error {
	switch {
	case !acc.Sees(by):
		return apperr.NotFound("asset", acc.AssetID)
	case acc.OwnerOrganizationID == "":
		return apperr.Invalid(apperr.FieldError{Field: field, Message: fmt.Sprintf("cannot be given %s: asset %s has no owner organization, "+
			"so it is shared with every client already; an admin gives it an owner first (POST /assets/owners)", what, acc.AssetID)})
	case !acc.ManagesAsset(by):
		e := apperr.New(apperr.KindForbidden, fmt.Sprintf("asset %s belongs to organization %s: only its clients or a client with "+
			"registry:admin may change its grants or hand it over", acc.AssetID, acc.OwnerOrganizationID))
		e.Code = "not-owner"
		return e
	}
	return nil
}

// notTheOwner is the 422 of a grant or transfer that names the asset's
// own owner.
func notTheOwner(acc model.Access, field string, id uuid.UUID) error {
	if acc.OwnerOrganizationID != id.String() {
		return nil
	}
	return apperr.Invalid(apperr.FieldError{Field: field, Message: "must name an organization other than the asset's owner, " + id.String()})
}

func (s *service) PutGrant(ctx context.Context, by model.Caller, assetID uuid.UUID, in GrantInput) (Grant, bool, error) {
	in, err := in.Normalize()
	if err != nil {
		return Grant{}, false, err
	}
	var created bool
	g, err := refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (Grant, error) {
		g, made, err := s.store.PutGrant(ctx, by, assetID, in, checked, func(acc model.Access) error {
			if err := manages(by, acc, "a grant", "organization_id"); err != nil {
				return err
			}
			if len(acc.Grants) >= MaxGrants && !slices.ContainsFunc(acc.Grants, func(g model.AssetGrant) bool {
				return g.OrganizationID == in.OrganizationID.UUID.String()
			}) {
				return apperr.Invalid(apperr.FieldError{Field: "organization_id",
					Message: fmt.Sprintf("cannot be given a grant: the asset has %d already, the most it may have", MaxGrants)})
			}
			return notTheOwner(acc, "organization_id", in.OrganizationID.UUID)
		})
		created = made
		return g, err
	})
	return g, created, err
}

// ListGrants answers whoever sees the asset.
func (s *service) ListGrants(ctx context.Context, by model.Caller, assetID uuid.UUID) ([]Grant, error) {
	acc, err := s.store.Access(ctx, assetID)
	if err != nil {
		return nil, err
	}
	if !acc.Sees(by) {
		return nil, apperr.NotFound("asset", assetID.String())
	}
	return s.store.Grants(ctx, assetID)
}

// DeleteGrant removes a grant under the rule of manages; a refusal names
// the client that made the grant as the not-owner problem's owner.
func (s *service) DeleteGrant(ctx context.Context, g model.Guard, assetID, organizationID uuid.UUID) error {
	return s.store.DeleteGrant(ctx, g, assetID, organizationID, func(acc model.Access, held *Grant) error {
		err := manages(g.Caller, acc, "a grant", "organization_id")
		if e, ok := err.(*apperr.Error); ok && held != nil && e.Code == "not-owner" {
			return e.With("owner", held.CreatedBy)
		}
		switch {
		case err != nil:
			return err
		case held == nil:
			return apperr.NotFound("grant of organization "+organizationID.String()+" on asset", assetID.String())
		}
		return g.Precondition(*held)
	})
}

func (s *service) CreateTransfer(ctx context.Context, by model.Caller, assetID uuid.UUID, in TransferInput) (Transfer, error) {
	var v apperr.Validation
	model.RequiredID(&v, "to_organization_id", in.ToOrganizationID)
	if err := v.Err(); err != nil {
		return Transfer{}, err
	}
	return refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (Transfer, error) {
		return s.store.CreateTransfer(ctx, by, assetID, in, checked, func(acc model.Access) error {
			if err := manages(by, acc, "the asset", "to_organization_id"); err != nil {
				return err
			}
			return notTheOwner(acc, "to_organization_id", in.ToOrganizationID.UUID)
		})
	})
}

// GetTransfer answers the clients of both sides, and every client that
// sees every row; anyone else is told it does not exist.
func (s *service) GetTransfer(ctx context.Context, by model.Caller, id uuid.UUID) (Transfer, error) {
	t, err := s.store.GetTransfer(ctx, id)
	if err == nil && !t.sees(by) {
		return Transfer{}, apperr.NotFound("transfer", id.String())
	}
	return t, err
}

func (s *service) ListTransfers(ctx context.Context, by model.Caller, f TransferFilter, page model.Page) (model.Paged[Transfer], error) {
	return s.store.ListTransfers(ctx, by.Organization, f, page)
}

// MoveTransfer moves a pending transfer: accept and reject are the
// receiving organization's, cancel the sending one's; an admin may make
// any move. A transfer the caller does not see is a 404, one that is no
// longer pending a 409.
func (s *service) MoveTransfer(ctx context.Context, by model.Caller, id uuid.UUID, move Move) (Transfer, error) {
	return s.store.MoveTransfer(ctx, by, id, move, func(t Transfer) error {
		if !t.sees(by) {
			return apperr.NotFound("transfer", id.String())
		}
		side, name := t.FromOrganizationID, "sending"
		if move.Receiver {
			side, name = t.ToOrganizationID, "receiving"
		}
		if !by.Admin && by.Organization != side.String() {
			return apperr.NotPermitted(fmt.Sprintf("only a client of the %s organization, %s, or a client with registry:admin may %s transfer %s",
				name, side, move.Name, id))
		}
		if t.State != StatePending {
			return apperr.Conflict(fmt.Sprintf("transfer %s is %s: only a pending transfer can be %s", id, t.State, move.State))
		}
		return nil
	})
}

func (s *service) SetOwners(ctx context.Context, by model.Caller, in OwnersInput) (OwnersResult, error) {
	in, err := in.Normalize()
	if err != nil {
		return OwnersResult{}, err
	}
	ids := make([]uuid.UUID, len(in.AssetIDs))
	for i, id := range in.AssetIDs {
		ids[i] = id.UUID
	}
	owner := in.owner()
	return refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (OwnersResult, error) {
		return s.store.SetOwners(ctx, by, ids, owner, checked)
	})
}

// AccessChanges answers up to limit changes after version after.
func (s *service) AccessChanges(ctx context.Context, after int64, limit int) (AccessChanges, error) {
	changes, err := s.store.AccessChanges(ctx, after, limit)
	out := AccessChanges{Changes: changes, Next: after, Watermark: s.store.log.WatermarkKey()}
	if n := len(changes); n > 0 {
		out.Next = changes[n-1].Version
	}
	return out, err
}

func (s *service) LookupAccess(ctx context.Context, in LookupInput) (Lookup, error) {
	if len(in.AssetIDs) > MaxLookup {
		return Lookup{}, apperr.Invalid(apperr.FieldError{Field: "asset_ids", Message: fmt.Sprintf("must name at most %d assets", MaxLookup)})
	}
	access, err := s.store.Lookup(ctx, in.AssetIDs)
	return Lookup{Access: access}, err
}
