package registry

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Resources as they were. GET /{collection}/{id}?as_of= answers a
// resource as the registry knew it at an instant, from its history (a
// resource deleted since is still answered); a resource that did not exist
// then, or that the caller does not see, is a Problem with IsNotFound.

// AsOfCollections are the collections whose resources can be read as they
// were.
var AsOfCollections = []string{"organizations", "people", "asset_types", "assets", "actions", "documents"}

func getAsOf[T any](ctx context.Context, c *Client, collection, id string, at time.Time) (*T, error) {
	return send[T](ctx, c, &call{method: http.MethodGet, path: "/" + collection + "/" + url.PathEscape(id),
		query: url.Values{"as_of": {at.UTC().Format(time.RFC3339Nano)}}}, nil)
}

// GetOrganizationAsOf is the organization as it was at the instant at.
func (c *Client) GetOrganizationAsOf(ctx context.Context, id string, at time.Time) (*Organization, error) {
	return getAsOf[Organization](ctx, c, "organizations", id, at)
}

// GetPersonAsOf is the person as it was at the instant at.
func (c *Client) GetPersonAsOf(ctx context.Context, id string, at time.Time) (*Person, error) {
	return getAsOf[Person](ctx, c, "people", id, at)
}

// GetAssetTypeAsOf is the asset type as it was at the instant at.
func (c *Client) GetAssetTypeAsOf(ctx context.Context, id string, at time.Time) (*AssetType, error) {
	return getAsOf[AssetType](ctx, c, "asset_types", id, at)
}

// GetAssetAsOf is the asset as it was at the instant at.
func (c *Client) GetAssetAsOf(ctx context.Context, id string, at time.Time) (*Asset, error) {
	return getAsOf[Asset](ctx, c, "assets", id, at)
}

// GetActionAsOf is the action as it was at the instant at.
func (c *Client) GetActionAsOf(ctx context.Context, id string, at time.Time) (*Action, error) {
	return getAsOf[Action](ctx, c, "actions", id, at)
}

// GetDocumentAsOf is the document's metadata as it was at the instant at.
func (c *Client) GetDocumentAsOf(ctx context.Context, id string, at time.Time) (*Document, error) {
	return getAsOf[Document](ctx, c, "documents", id, at)
}
