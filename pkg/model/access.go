package model

import (
	"fmt"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Organizations as tenants (docs/tenancy.md): who sees an asset,
// and everything recorded on it, is decided here and nowhere else. Every
// service that answers for an asset's record holds the asset's Access (the
// assets service owns it; the others keep a copy, see docs/architecture.md)
// and asks it; stores turn the same rule into a WHERE clause, and the
// end-to-end matrix holds the two equal.

// Grant roles: what an organization other than the owner may do with an
// asset.
const (
	// GrantRead lets an organization's clients see the asset and its record.
	GrantRead = "read"
	// GrantInspect also lets them record actions on it and link documents
	// to those actions.
	GrantInspect = "inspect"
)

// GrantRoles are the roles a grant may carry.
var GrantRoles = []string{GrantRead, GrantInspect}

// AssetGrant is one organization's grant on an asset.
type AssetGrant struct {
	OrganizationID string `json:"organization_id"`
	Role           string `json:"role"`
}

// Access is what decides who sees an asset and who records on it: its
// owner organization (empty: none, the asset is shared) and its grants.
// Version orders the changes of one asset's access (a transfer, a grant):
// a copy applies a change only when it is newer than the one it holds.
type Access struct {
	AssetID             string       `json:"asset_id"`
	OwnerOrganizationID string       `json:"owner_organization_id,omitempty"`
	Grants              []AssetGrant `json:"grants,omitempty"`
	Version             int64        `json:"version"`
}

// Relation is how a caller stands to an asset.
type Relation int

const (
	// Unseen: the caller's organization neither owns the asset nor holds a
	// grant on it; the asset does not exist for it.
	Unseen Relation = iota
	// Reader: seen through a read grant.
	Reader
	// Inspector: seen through an inspect grant; records actions on it.
	Inspector
	// Shared: the asset has no owner; every client sees it and records on it.
	Shared
	// Owner: the caller's organization owns the asset.
	Owner
	// Everything: the caller is bound to no organization, or is an admin,
	// and sees every row as before tenancy.
	Everything
)

// RelationOf is how c stands to the asset a describes.
func (a Access) RelationOf(c Caller) Relation {
	switch {
	case c.Organization == "":
		return Everything
	case a.OwnerOrganizationID == "":
		return Shared
	case a.OwnerOrganizationID == c.Organization:
		return Owner
	}
	for _, g := range a.Grants {
		if g.OrganizationID != c.Organization {
			continue
		}
		if g.Role == GrantInspect {
			return Inspector
		}
		return Reader
	}
	return Unseen
}

// Sees reports whether c may know the asset, and its record, exist.
func (a Access) Sees(c Caller) bool { return a.RelationOf(c) != Unseen }

// MayRecord is nil when c may record an action on the asset (and link
// documents to its actions): 404 when c does not see it (the caller is
// told what it would be told of an asset that does not exist), 403
// not-permitted when it sees it through a read grant only.
func (a Access) MayRecord(c Caller) error {
	switch a.RelationOf(c) {
	case Unseen:
		return apperr.NotFound("asset", a.AssetID)
	case Reader:
		return apperr.NotPermitted(fmt.Sprintf(
			"your organization holds a read grant on asset %s; recording on it needs the owner's inspect grant", a.AssetID))
	}
	return nil
}

// ManagesAsset reports whether c may change the asset's grants or hand it
// over: its owner organization's clients, and an admin.
func (a Access) ManagesAsset(c Caller) bool {
	if c.Admin {
		return true
	}
	return c.Organization != "" && c.Organization == a.OwnerOrganizationID
}
