package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// An operator loads a preset plan for an asset type with `registry plans
// load` (an integration may not: registry:admin); `registry compliance`
// then gives the asset's first due date, as a table too.
func TestPlansAndCompliance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	c := newClient(t, http.DefaultTransport)
	suffix := fmt.Sprint(time.Now().UnixNano())
	typ, err := c.CreateAssetType(ctx, registry.AssetTypeInput{Brand: "Petzl", Model: "Harness " + suffix})
	if err != nil {
		t.Fatal(err)
	}
	asset, err := c.CreateAsset(ctx, registry.AssetInput{SerialNumber: "H-" + suffix, AssetTypeID: typ.ID})
	if err != nil {
		t.Fatal(err)
	}
	admin := []string{"CLIENT_ID=" + suite.Creds.AdminClientID, "CLIENT_SECRET=" + suite.Creds.AdminClientSecret}

	out, stderr, code := cli(t, dir, nil, "plans", "presets", "-output", "table")
	if code != 0 || !strings.Contains(out, "fall-protection-12m") {
		t.Fatalf("plans presets: %d %q %s", code, out, stderr)
	}
	if _, stderr, code := cli(t, dir, nil, "plans", "load", "fall-protection-12m", "-asset-type", typ.ID); code == 0 ||
		!strings.Contains(stderr, "registry:admin") {
		t.Errorf("an integration loaded a plan: %d %s", code, stderr)
	}
	out, stderr, code = cli(t, dir, admin, "plans", "load", "fall-protection-12m", "-asset-type", typ.ID)
	var plan registry.InspectionPlan
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || plan.Interval != "P12M" || *plan.AssetTypeID != typ.ID {
		t.Fatalf("plans load: %d %q %s", code, out, stderr)
	}
	if _, _, code := cli(t, dir, admin, "plans", "load", "no-such-preset"); code == 0 {
		t.Error("loading a preset that does not exist succeeded")
	}

	// The asset reaches the compliance read model from its event: wait
	// for its row (not a timing assertion: the contract's 5 s are a bench
	// row).
	registered := time.Now().UTC().Format(time.DateOnly)
	var rows []registry.ComplianceRow
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, stderr, code = cli(t, dir, nil, "compliance", "-asset", asset.ID, "-action-type", "expert_control")
		if code != 0 {
			t.Fatalf("compliance: %d %s", code, stderr)
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("compliance: %v in %q", err, out)
		}
		if len(rows) > 0 {
			break
		}
	}
	if len(rows) != 1 || rows[0].State != "never" || rows[0].DueDate == nil || *rows[0].DueDate != registered {
		t.Fatalf("the asset's expert control under a P12M plan due P0D after registration (%s): %+v", registered, rows)
	}
	out, _, code = cli(t, dir, nil, "compliance", "-asset", asset.ID, "-state", "never", "-state", "overdue", "-output", "table")
	if code != 0 || !strings.HasPrefix(out, "ASSET_ID") || !strings.Contains(out, registered) {
		t.Errorf("compliance -output table: %d %q", code, out)
	}
	// As of yesterday the asset was not registered yet; as of today it is.
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	out, stderr, code = cli(t, dir, nil, "compliance", "-asset", asset.ID, "-as-of", yesterday)
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("compliance -as-of %s of an asset registered today: %d %q %s", yesterday, code, out, stderr)
	}
	out, _, code = cli(t, dir, nil, "compliance", "-asset", asset.ID, "-action-type", "expert_control", "-as-of", registered)
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].State != "never" {
		t.Errorf("compliance -as-of %s: %d %q", registered, code, out)
	}
	// The SDK's own iterator answers the same.
	n := 0
	for row, err := range c.Compliance(ctx, registry.ComplianceQuery{AssetID: asset.ID, States: []string{"never"}, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		if row.AssetID != asset.ID {
			t.Errorf("a row of another asset: %+v", row)
		}
		n++
	}
	if n != 4 {
		t.Errorf("%d never rows for a new asset, want one per action type", n)
	}
	if _, _, code := cli(t, dir, admin, "plans", "delete", plan.ID); code != 0 {
		t.Errorf("plans delete: exit %d", code)
	}
}
