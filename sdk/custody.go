package registry

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// Grant roles: what an organization other than an asset's owner may do
// with it.
const (
	GrantRead    = "read"    // see the asset and its record
	GrantInspect = "inspect" // also record actions on it
)

// Grant is an organization's grant on an asset.
type Grant struct {
	OrganizationID string    `json:"organization_id"`
	Role           string    `json:"role"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedBy      string    `json:"created_by"`
}

// GrantInput is a grant's body: the organization and its role.
type GrantInput struct {
	OrganizationID string `json:"organization_id"`
	Role           string `json:"role"`
}

// Transfer states.
const (
	TransferPending   = "pending"
	TransferAccepted  = "accepted"
	TransferRejected  = "rejected"
	TransferCancelled = "cancelled"
)

// Transfer is an asset's handover from its owner organization to another.
type Transfer struct {
	ID                 string `json:"id"`
	AssetID            string `json:"asset_id"`
	FromOrganizationID string `json:"from_organization_id"`
	ToOrganizationID   string `json:"to_organization_id"`
	State              string `json:"state"`
	Audit
}

// TransferInput names the receiving organization.
type TransferInput struct {
	ToOrganizationID string `json:"to_organization_id"`
}

// OwnersInput is an admin's change of the owner of many assets; a nil
// OwnerOrganizationID makes them shared (no owner).
type OwnersInput struct {
	AssetIDs            []string `json:"asset_ids"`
	OwnerOrganizationID *string  `json:"owner_organization_id"`
}

// OwnersResult says which assets changed owner.
type OwnersResult struct {
	Changed   []string `json:"changed"`
	Unchanged []string `json:"unchanged"`
}

func assetPath(id string) string { return "/assets/" + url.PathEscape(id) }

// Grants: the owner organization's clients (or an admin) manage them.

// ListGrants lists an asset's grants.
func (c *Client) ListGrants(ctx context.Context, assetID string) ([]Grant, error) {
	g, err := get[[]Grant](ctx, c, assetPath(assetID)+"/grants")
	if err != nil {
		return nil, err
	}
	return *g, nil
}

// PutGrant gives the organization the role on the asset, or replaces the
// role it holds.
func (c *Client) PutGrant(ctx context.Context, assetID string, in GrantInput, opts ...CallOption) (*Grant, error) {
	return create[Grant](ctx, c, assetPath(assetID)+"/grants", in, opts)
}

// DeleteGrant removes the organization's grant on the asset.
func (c *Client) DeleteGrant(ctx context.Context, assetID, organizationID string, opts ...CallOption) error {
	return c.delete(ctx, assetPath(assetID)+"/grants/"+url.PathEscape(organizationID), nil, opts)
}

// SetAssetOwners makes an organization (nil: none) the owner of many
// assets at once; it needs registry:admin.
func (c *Client) SetAssetOwners(ctx context.Context, in OwnersInput, opts ...CallOption) (*OwnersResult, error) {
	return create[OwnersResult](ctx, c, "/assets/owners", in, opts)
}

// Transfers.

// CreateTransfer offers an asset to another organization: pending until
// it accepts or rejects it, or the sender cancels it.
func (c *Client) CreateTransfer(ctx context.Context, assetID string, in TransferInput, opts ...CallOption) (*Transfer, error) {
	return create[Transfer](ctx, c, assetPath(assetID)+"/transfers", in, opts)
}

// GetTransfer reads a transfer.
func (c *Client) GetTransfer(ctx context.Context, id string) (*Transfer, error) {
	return get[Transfer](ctx, c, "/transfers/"+url.PathEscape(id))
}

// ListTransfers pages through the transfers the caller sees; state and
// asset_id filter them.
func (c *Client) ListTransfers(ctx context.Context, f Filter) iter.Seq2[Transfer, error] {
	return list[Transfer](ctx, c, "/transfers", f)
}

// AcceptTransfer makes the receiving organization the asset's owner.
func (c *Client) AcceptTransfer(ctx context.Context, id string, opts ...CallOption) (*Transfer, error) {
	return c.moveTransfer(ctx, id, "accept", opts)
}

// RejectTransfer ends a transfer as its receiver.
func (c *Client) RejectTransfer(ctx context.Context, id string, opts ...CallOption) (*Transfer, error) {
	return c.moveTransfer(ctx, id, "reject", opts)
}

// CancelTransfer ends a transfer as its sender.
func (c *Client) CancelTransfer(ctx context.Context, id string, opts ...CallOption) (*Transfer, error) {
	return c.moveTransfer(ctx, id, "cancel", opts)
}

func (c *Client) moveTransfer(ctx context.Context, id, move string, opts []CallOption) (*Transfer, error) {
	return send[Transfer](ctx, c, &call{method: http.MethodPost, path: "/transfers/" + url.PathEscape(id) + "/" + move, keyed: true}, opts)
}
