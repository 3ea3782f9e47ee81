package sdktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// eventually retries check until it passes or 15 s have gone (a history
// read follows the write's event, which appears within 5 s).
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A resource read as it was: the SDK's Get*AsOf and the command's -as-of
// answer the state before a change, and not-found before the resource was.
func TestGetAsOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	suffix := time.Now().Format("150405.000000")
	before := time.Now().Add(-time.Second)
	org, err := c.CreateOrganization(ctx, registry.OrganizationInput{Name: "Old name", RegistrationNumber: "ASOF-" + suffix,
		OrganizationType: registry.OrganizationPrivate, Country: "NO"})
	if err != nil {
		t.Fatal(err)
	}
	typ, err := c.CreateAssetType(ctx, registry.AssetTypeInput{Brand: "AsOf", Model: suffix})
	if err != nil {
		t.Fatal(err)
	}
	asset, err := c.CreateAsset(ctx, registry.AssetInput{SerialNumber: "ASOF-" + suffix, AssetTypeID: typ.ID, Status: "active"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	between := time.Now()
	time.Sleep(1100 * time.Millisecond)
	if _, err := c.UpdateOrganization(ctx, org.ID, registry.Patch{"name": "New name"}, registry.IfMatch(org.ETag)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateAsset(ctx, asset.ID, registry.Patch{"status": "inactive"}, registry.IfMatch(asset.ETag)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		o, err := c.GetOrganizationAsOf(ctx, org.ID, between)
		if err != nil {
			return err
		}
		if o.Name != "Old name" {
			return fmt.Errorf("the organization as of %s is named %q", between, o.Name)
		}
		a, err := c.GetAssetAsOf(ctx, asset.ID, between)
		if err != nil {
			return err
		}
		if a.Status == nil || *a.Status != "active" {
			return fmt.Errorf("the asset as of %s has status %v", between, a.Status)
		}
		now, err := c.GetAssetAsOf(ctx, asset.ID, time.Now())
		if err != nil {
			return err
		}
		if now.Status == nil || *now.Status != "inactive" {
			return fmt.Errorf("the asset as of now has status %v", now.Status)
		}
		return nil
	})
	if _, err := c.GetAssetTypeAsOf(ctx, typ.ID, between); err != nil {
		t.Errorf("asset type as of %s: %v", between, err)
	}
	if _, err := c.GetOrganizationAsOf(ctx, org.ID, before); !registry.IsNotFound(err) {
		t.Errorf("the organization before it existed: %v, want not found", err)
	}

	dir := t.TempDir()
	out, stderr, code := cli(t, dir, nil, "organizations", "get", org.ID, "-as-of", between.UTC().Format(time.RFC3339Nano))
	if code != 0 || !strings.Contains(out, `"Old name"`) {
		t.Errorf("organizations get -as-of: exit %d, %s %s", code, out, stderr)
	}
	out, stderr, code = cli(t, dir, nil, "assets", "get", asset.ID, "-as-of", between.UTC().Format(time.RFC3339))
	if code != 0 || !strings.Contains(out, `"active"`) {
		t.Errorf("assets get -as-of: exit %d, %s %s", code, out, stderr)
	}
	if _, _, code := cli(t, dir, nil, "organizations", "get", org.ID, "-as-of", before.UTC().Format(time.RFC3339)); code != 1 {
		t.Errorf("organizations get -as-of before it existed: exit %d, want 1", code)
	}
	if _, stderr, code := cli(t, dir, nil, "organizations", "get", org.ID, "-as-of", "yesterday"); code != 2 || !strings.Contains(stderr, "-as-of") {
		t.Errorf("organizations get -as-of yesterday: exit %d, %s; want 2 naming -as-of", code, stderr)
	}
}

// `registry actions find`: the action holding a source pair, a 404 for a
// pair nobody holds, and -create recording it once.
func TestActionsFindCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	suffix := time.Now().Format("150405.000000")
	typ, err := c.CreateAssetType(ctx, registry.AssetTypeInput{Brand: "Find", Model: suffix})
	if err != nil {
		t.Fatal(err)
	}
	asset, err := c.CreateAsset(ctx, registry.AssetInput{SerialNumber: "FIND-" + suffix, AssetTypeID: typ.ID})
	if err != nil {
		t.Fatal(err)
	}
	action, err := c.CreateAction(ctx, registry.ActionInput{AssetID: asset.ID, ActionType: registry.ActionExpertControl,
		PerformedAt: "2025-03-14", SourceSystem: "crm", SourceReference: "job-" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, stderr, code := cli(t, dir, nil, "actions", "find", "-source-system", "crm", "-source-reference", "job-"+suffix)
	if code != 0 || !strings.Contains(out, action.ID) {
		t.Fatalf("actions find: exit %d, %s %s; want %s", code, out, stderr, action.ID)
	}
	if _, stderr, code := cli(t, dir, nil, "actions", "find", "-source-system", "crm", "-source-reference", "other-"+suffix); code != 1 || !strings.Contains(stderr, "404") {
		t.Errorf("actions find of a pair nobody holds: exit %d, %s; want 1 and a 404", code, stderr)
	}
	body := fmt.Sprintf(`{"asset_id": %q, "action_type": "expert_control", "performed_at": "2025-03-15"}`, asset.ID)
	var ids []string
	for range 2 {
		out, stderr, code := cli(t, dir, nil, "actions", "find", "-source-system", "crm", "-source-reference", "new-"+suffix, "-create", "-data", body)
		var got registry.Action
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("actions find -create: exit %d, %s %s", code, out, stderr)
		}
		ids = append(ids, got.ID)
	}
	if ids[0] == "" || ids[0] != ids[1] || ids[0] == action.ID {
		t.Errorf("actions find -create twice answered %v: want one new action", ids)
	}
}

// `registry batch`: one outcome per line, in order; a refused item or a
// line that is no item makes the exit status 1 without stopping the
// others; the same file sent again replays the same answers.
func TestBatchCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	suffix := time.Now().Format("150405.000000")
	typ, err := c.CreateAssetType(ctx, registry.AssetTypeInput{Brand: "Batch", Model: suffix})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	asset := func(sn string) string {
		return fmt.Sprintf(`{"serial_number": %q, "asset_type_id": %q}`, sn+"-"+suffix, typ.ID)
	}
	mixed := write("mixed.ndjson", asset("A"), `{"serial_number": "X", "asset_type_id": "not-a-uuid"}`, "", "[1, 2]", asset("B"))
	outcomes := func(out string) []map[string]any {
		var all []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var o map[string]any
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatalf("an outcome line %q: %v", l, err)
			}
			all = append(all, o)
		}
		return all
	}
	out, stderr, code := cli(t, dir, nil, "batch", "assets", mixed)
	if code != 1 {
		t.Errorf("batch with bad lines: exit %d, want 1 (%s)", code, stderr)
	}
	got := outcomes(out)
	if len(got) != 4 {
		t.Fatalf("batch: %d outcomes, want 4: %s", len(got), out)
	}
	byLine := map[float64]map[string]any{}
	for _, o := range got {
		byLine[o["line"].(float64)] = o
	}
	if byLine[1]["status"] != 201.0 || byLine[5]["status"] != 201.0 || byLine[2]["status"] != 422.0 || byLine[4]["error"] == nil {
		t.Errorf("batch outcomes: %s", out)
	}
	again, _, _ := cli(t, dir, nil, "batch", "assets", mixed)
	for _, o := range outcomes(again) {
		if l := o["line"].(float64); o["id"] != byLine[l]["id"] || o["status"] != byLine[l]["status"] {
			t.Errorf("line %v sent again: %v, first %v", l, o, byLine[l])
		}
	}
	good := write("good.ndjson", asset("C"), asset("D"))
	if out, stderr, code := cli(t, dir, nil, "batch", "assets", good); code != 0 || len(outcomes(out)) != 2 {
		t.Errorf("batch of good lines: exit %d, %s %s", code, out, stderr)
	}
	n := 0
	for a, err := range c.ListAssets(ctx, registry.Filter{"asset_type_id": typ.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		if a.ID != "" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d assets of the type, want 4 (A, B, C, D once each)", n)
	}
	if _, _, code := cli(t, dir, nil, "batch", "plans", good); code != 2 {
		t.Errorf("batch plans: exit %d, want 2", code)
	}
}

// Documents found by their bytes: the SDK and `registry documents find`
// list every document whose file has the sum, and a sum that is not one
// is the registry's 422.
func TestFindDocumentsBySHA256(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	content := "report " + time.Now().Format(time.RFC3339Nano)
	var ids []string
	for range 2 {
		d, err := c.Upload(ctx, "expert_control_report", "r.txt", strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	other, err := c.Upload(ctx, "expert_control_report", "o.txt", strings.NewReader(content+" other"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	hexSum := hex.EncodeToString(sum[:])
	var found []string
	for d, err := range c.FindDocumentsBySHA256(ctx, hexSum) {
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, d.ID)
	}
	if !slices.Equal(found, ids) {
		t.Errorf("found %v, want %v (not %s)", found, ids, other.ID)
	}
	eventually(t, func() error {
		d, err := c.GetDocumentAsOf(ctx, ids[0], time.Now())
		if err == nil && d.SHA256 != hexSum {
			return fmt.Errorf("the document as of now has sum %s", d.SHA256)
		}
		return err
	})

	dir := t.TempDir()
	out, stderr, code := cli(t, dir, nil, "documents", "find", "-sha256", hexSum)
	var listed []registry.Document
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 2 || listed[0].ID != ids[0] || listed[1].ID != ids[1] {
		t.Errorf("documents find: exit %d, %s %s; want %v", code, out, stderr, ids)
	}
	if _, stderr, code := cli(t, dir, nil, "documents", "find", "-sha256", strings.ToUpper(hexSum)); code != 1 || !strings.Contains(stderr, "sha256") {
		t.Errorf("documents find with an upper-case sum: exit %d, %s; want 1 naming sha256", code, stderr)
	}
}
