// Package registry is the Go client of the Asset Registry: typed requests
// and answers for every operation, OAuth 2.0 client-credentials tokens
// fetched and refreshed before they expire, retries that never duplicate a
// write (each logical call carries one Idempotency-Key), lists and the
// change feed as iterators, and problems as errors.
//
//	c, err := registry.New(registry.Config{
//		URL: os.Getenv("REGISTRY_URL"), AuthURL: os.Getenv("AUTH_URL"),
//		ClientID: os.Getenv("CLIENT_ID"), ClientSecret: os.Getenv("CLIENT_SECRET"),
//	})
//	org, err := c.CreateOrganization(ctx, registry.OrganizationInput{...})
//	var p *registry.Problem
//	if errors.As(err, &p) && p.ExistingID != "" { ... }
//
// The package imports nothing of the registry's own code, so it can be
// used alone: go get github.com/assetregistry/registry/sdk.
package registry
