package custody

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Grant is one organization's grant on an asset, as GET
// /assets/{id}/grants lists it.
type Grant struct {
	AssetID        uuid.UUID `json:"-" db:"asset_id"`
	OrganizationID uuid.UUID `json:"organization_id" db:"organization_id"`
	Role           string    `json:"role" db:"role"`
	CreatedAt      time.Time `json:"created_at" db:"created_at"`
	CreatedBy      string    `json:"created_by" db:"created_by"`
}

// grantEvent is a grant as its change events carry it: with the asset it
// is on, which the events service decides who sees it by.
type grantEvent struct {
	AssetID uuid.UUID `json:"asset_id"`
	Grant
}

// grantSubject is a grant's event subject id: "<asset_id>:<organization_id>",
// as a person-organization link's is made of what it links.
func grantSubject(assetID, organizationID uuid.UUID) string {
	return assetID.String() + ":" + organizationID.String()
}

// GrantInput is the body of POST /assets/{id}/grants.
type GrantInput struct {
	OrganizationID model.UUID `json:"organization_id"`
	Role           string     `json:"role"`
}

// Normalize checks the fields.
func (in GrantInput) Normalize() (GrantInput, error) {
	var v apperr.Validation
	model.RequiredID(&v, "organization_id", in.OrganizationID)
	in.Role = strings.TrimSpace(in.Role)
	if !slices.Contains(model.GrantRoles, in.Role) {
		v.Add("role", "must be one of %s", strings.Join(model.GrantRoles, ", "))
	}
	return in, v.Err()
}

// StatePending is the state a transfer is created in; it moves once, to
// the state of a Move.
const StatePending = "pending"

// States are the states a transfer can be in.
var States = []string{StatePending, Accept.State, Reject.State, Cancel.State}

// Transfer is an asset's handover from its owner organization to another,
// which that one accepts or rejects (or the sender cancels).
type Transfer struct {
	ID                 uuid.UUID `json:"id" db:"id"`
	AssetID            uuid.UUID `json:"asset_id" db:"asset_id"`
	FromOrganizationID uuid.UUID `json:"from_organization_id" db:"from_organization_id"`
	ToOrganizationID   uuid.UUID `json:"to_organization_id" db:"to_organization_id"`
	State              string    `json:"state" db:"state"`
	model.Audit
}

// sees reports whether c may know of the transfer: a client of either
// side, or one that sees every row.
func (t Transfer) sees(c model.Caller) bool {
	return c.Organization == "" || c.Organization == t.FromOrganizationID.String() || c.Organization == t.ToOrganizationID.String()
}

// TransferInput is the body of POST /assets/{id}/transfers.
type TransferInput struct {
	ToOrganizationID model.UUID `json:"to_organization_id"`
}

// TransferFilter narrows a list of transfers.
type TransferFilter struct {
	State   *string
	AssetID *uuid.UUID
}

// Move is what POST /transfers/{id}/<move> does to a pending transfer, and
// which side may do it.
type Move struct {
	Name  string // accept, reject, cancel
	State string // the state it moves the transfer to
	// Receiver: the receiving organization's clients may; otherwise the
	// sending one's. An admin may always.
	Receiver bool
}

// The three moves of a pending transfer.
var (
	Accept = Move{Name: "accept", State: "accepted", Receiver: true}
	Reject = Move{Name: "reject", State: "rejected", Receiver: true}
	Cancel = Move{Name: "cancel", State: "cancelled"}
)

// OwnersInput is the body of POST /assets/owners: an admin's change of the
// owner of many assets at once (null: no owner, the assets become shared).
// The owner must be given, null included: an admin who left it out did
// not mean to make the assets shared.
type OwnersInput struct {
	AssetIDs            []model.UUID                 `json:"asset_ids"`
	OwnerOrganizationID model.PatchField[model.UUID] `json:"owner_organization_id"`
}

// owner is the owner the input names (nil: none).
func (in OwnersInput) owner() *uuid.UUID {
	if in.OwnerOrganizationID.Null {
		return nil
	}
	return &in.OwnerOrganizationID.Value.UUID
}

// MaxGrants bounds the grants of one asset, and so every answer and log
// row that lists them.
const MaxGrants = 1000

// MaxOwners bounds the assets of one POST /assets/owners.
const MaxOwners = 1000

// Normalize checks the fields: at least one asset, at most MaxOwners,
// each once.
func (in OwnersInput) Normalize() (OwnersInput, error) {
	var v apperr.Validation
	switch {
	case len(in.AssetIDs) == 0:
		v.Add("asset_ids", "must name at least one asset")
	case len(in.AssetIDs) > MaxOwners:
		v.Add("asset_ids", "must name at most %d assets", MaxOwners)
	}
	if !in.OwnerOrganizationID.Set {
		v.Add("owner_organization_id", "is required: an organization's id, or null for none")
	}
	seen := map[uuid.UUID]bool{}
	for i, id := range in.AssetIDs {
		switch {
		case id.UUID == uuid.Nil:
			v.Add(indexed("asset_ids", i), "is required")
		case seen[id.UUID]:
			v.Add(indexed("asset_ids", i), "names asset %s a second time", id.UUID)
		}
		seen[id.UUID] = true
	}
	return in, v.Err()
}

// OwnersResult is the answer of POST /assets/owners: the assets whose
// owner changed, and those that had it already.
type OwnersResult struct {
	Changed   []uuid.UUID `json:"changed"`
	Unchanged []uuid.UUID `json:"unchanged"`
}

// AccessChanges is one page of the access change log (GET
// /internal/asset_access): Next is the last version returned, or the
// asked position when nothing followed it.
type AccessChanges struct {
	Changes []model.Access `json:"changes"`
	Next    int64          `json:"next"`
	// Watermark is the Redis key of the log's watermark (accesslog), left
	// out without Redis: a copy that has read the log up to its value
	// needs not read it again.
	Watermark string `json:"watermark,omitempty"`
}

// Limits of a page of the access change log.
const (
	DefaultAccessLimit = 1000
	MaxAccessLimit     = 10000
	// MaxLookup bounds the assets of one lookup.
	MaxLookup = 1000
)

// LookupInput is the body of POST /internal/asset_access/lookup.
type LookupInput struct {
	AssetIDs []uuid.UUID `json:"asset_ids"`
}

// Lookup is its answer: the current access of each asset that exists.
type Lookup struct {
	Access []model.Access `json:"access"`
}

func indexed(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }
