package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// An asset's custody from the SDK and the registry command: an admin
// (who manages every asset) grants, hands over and sets owners; an
// integration that is neither the owner's nor an admin is refused.
func TestGrantsTransfersAndOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	c := newClient(t, http.DefaultTransport)
	cr := suite.Creds
	root, err := registry.New(registry.Config{URL: cr.RegistryURL, AuthURL: cr.AuthURL, Resource: cr.Resource,
		ClientID: cr.AdminClientID, ClientSecret: cr.AdminClientSecret})
	if err != nil {
		t.Fatal(err)
	}
	admin := []string{"CLIENT_ID=" + cr.AdminClientID, "CLIENT_SECRET=" + cr.AdminClientSecret}
	suffix := fmt.Sprint(time.Now().UnixNano())
	org := func(name string) string {
		o, err := c.CreateOrganization(ctx, registry.OrganizationInput{Name: name, RegistrationNumber: name + "-" + suffix,
			OrganizationType: registry.OrganizationPrivate, Country: "NO"})
		if err != nil {
			t.Fatal(err)
		}
		return o.ID
	}
	orgA, orgB := org("Owner"), org("Receiver")
	typ, err := c.CreateAssetType(ctx, registry.AssetTypeInput{Brand: "Custody", Model: "C-" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	asset, err := c.CreateAsset(ctx, registry.AssetInput{SerialNumber: "C-" + suffix, AssetTypeID: typ.ID, OwnerOrganizationID: orgA})
	if err != nil || asset.OwnerOrganizationID == nil || *asset.OwnerOrganizationID != orgA {
		t.Fatalf("asset: %+v %v", asset, err)
	}

	// Grants: the integration is refused, the admin manages them.
	var p *registry.Problem
	if _, err := c.PutGrant(ctx, asset.ID, registry.GrantInput{OrganizationID: orgB, Role: registry.GrantRead}); !errors.As(err, &p) ||
		p.Status != 403 || !strings.HasSuffix(p.Type, "not-owner") {
		t.Errorf("an integration's grant: %v", err)
	}
	out, stderr, code := cli(t, dir, admin, "grants", "add", asset.ID, orgB, "-role", "inspect")
	var g registry.Grant
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.OrganizationID != orgB || g.Role != registry.GrantInspect {
		t.Fatalf("grants add: %d %q %s", code, out, stderr)
	}
	if got, err := root.PutGrant(ctx, asset.ID, registry.GrantInput{OrganizationID: orgB, Role: registry.GrantRead}); err != nil || got.Role != registry.GrantRead {
		t.Errorf("replaced grant: %+v %v", got, err)
	}
	if grants, err := c.ListGrants(ctx, asset.ID); err != nil || len(grants) != 1 || grants[0].Role != registry.GrantRead {
		t.Errorf("grants: %+v %v", grants, err)
	}
	if out, stderr, code := cli(t, dir, nil, "grants", "list", asset.ID, "-output", "table"); code != 0 || !strings.Contains(out, orgB) {
		t.Errorf("grants list: %d %q %s", code, out, stderr)
	}
	if _, stderr, code := cli(t, dir, admin, "grants", "remove", asset.ID, orgB); code != 0 {
		t.Errorf("grants remove: %d %s", code, stderr)
	}
	if err := root.DeleteGrant(ctx, asset.ID, orgB); !errors.As(err, &p) || p.Status != 404 {
		t.Errorf("removing a removed grant: %v", err)
	}

	// Transfers: rejected, cancelled, then accepted from the command.
	first, err := root.CreateTransfer(ctx, asset.ID, registry.TransferInput{ToOrganizationID: orgB})
	if err != nil || first.State != registry.TransferPending || first.FromOrganizationID != orgA {
		t.Fatalf("transfer: %+v %v", first, err)
	}
	if got, err := root.RejectTransfer(ctx, first.ID); err != nil || got.State != registry.TransferRejected {
		t.Errorf("reject: %+v %v", got, err)
	}
	second, err := root.CreateTransfer(ctx, asset.ID, registry.TransferInput{ToOrganizationID: orgB})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := root.CancelTransfer(ctx, second.ID); err != nil || got.State != registry.TransferCancelled {
		t.Errorf("cancel: %+v %v", got, err)
	}
	out, stderr, code = cli(t, dir, admin, "transfers", "create", asset.ID, orgB)
	var third registry.Transfer
	if code != 0 || json.Unmarshal([]byte(out), &third) != nil || third.State != registry.TransferPending {
		t.Fatalf("transfers create: %d %q %s", code, out, stderr)
	}
	n := 0
	for tr, err := range c.ListTransfers(ctx, registry.Filter{"asset_id": asset.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if got, err := c.GetTransfer(ctx, tr.ID); err != nil || got.AssetID != asset.ID {
			t.Errorf("transfer %s: %+v %v", tr.ID, got, err)
		}
	}
	if n != 3 {
		t.Errorf("the asset's transfers: %d", n)
	}
	if out, stderr, code := cli(t, dir, nil, "transfers", "list", "-filter", "state=pending", "-filter", "asset_id="+asset.ID, "-output", "table"); code != 0 ||
		!strings.Contains(out, third.ID) {
		t.Errorf("transfers list: %d %q %s", code, out, stderr)
	}
	if _, stderr, code := cli(t, dir, admin, "transfers", "accept", third.ID); code != 0 {
		t.Errorf("transfers accept: %d %s", code, stderr)
	}
	if _, err := root.AcceptTransfer(ctx, third.ID); !errors.As(err, &p) || p.Status != 409 {
		t.Errorf("accepting an accepted transfer: %v", err)
	}
	if got, err := c.GetAsset(ctx, asset.ID); err != nil || got.OwnerOrganizationID == nil || *got.OwnerOrganizationID != orgB {
		t.Errorf("after acceptance: %+v %v", got, err)
	}

	// Owners in bulk: the admin's, from the SDK and the command.
	res, err := root.SetAssetOwners(ctx, registry.OwnersInput{AssetIDs: []string{asset.ID}})
	if err != nil || len(res.Changed) != 1 {
		t.Errorf("set owners to none: %+v %v", res, err)
	}
	if _, _, code := cli(t, dir, nil, "assets", "set-owner", orgA, asset.ID); code == 0 {
		t.Error("an integration set an owner")
	}
	out, stderr, code = cli(t, dir, admin, "assets", "set-owner", orgA, asset.ID)
	if code != 0 || !strings.Contains(out, asset.ID) {
		t.Errorf("assets set-owner: %d %q %s", code, out, stderr)
	}
	if got, err := c.GetAsset(ctx, asset.ID); err != nil || got.OwnerOrganizationID == nil || *got.OwnerOrganizationID != orgA {
		t.Errorf("after set-owner: %+v %v", got, err)
	}
}
