package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// Batches of updates through the SDK (UpdateAssets, UpdateActions) and
// `registry batch -patch`: each item under its own if_match, answered on
// its own with the new ETag; a stale one is a 412 that fails its line.
func TestBatchUpdates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	suffix := time.Now().Format("150405.000000")
	typ, err := c.CreateAssetType(ctx, registry.AssetTypeInput{Brand: "BatchPatch", Model: suffix})
	if err != nil {
		t.Fatal(err)
	}
	one, err := c.CreateAsset(ctx, registry.AssetInput{SerialNumber: "P1-" + suffix, AssetTypeID: typ.ID})
	if err != nil {
		t.Fatal(err)
	}
	two, err := c.CreateAsset(ctx, registry.AssetInput{SerialNumber: "P2-" + suffix, AssetTypeID: typ.ID})
	if err != nil {
		t.Fatal(err)
	}
	results, err := c.UpdateAssets(ctx, []registry.PatchItem{
		{ID: one.ID, IfMatch: one.ETag, Patch: registry.Patch{"status": "in service"}},
		{ID: two.ID, IfMatch: `"stale"`, Patch: registry.Patch{"status": "retired"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetAsset(ctx, one.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Status != 200 || results[0].ETag != got.ETag || got.Status == nil || *got.Status != "in service" ||
		results[1].Status != 412 || results[1].Err() == nil {
		t.Errorf("UpdateAssets: %+v; asset %+v", results, got)
	}

	action, err := c.CreateAction(ctx, registry.ActionInput{AssetID: one.ID, ActionType: "maintenance", PerformedAt: "2025-06-01"})
	if err != nil {
		t.Fatal(err)
	}
	results, err = c.UpdateActions(ctx, []registry.PatchItem{{ID: action.ID, IfMatch: action.ETag, Patch: registry.Patch{"reference": "WO-1"}}})
	if err != nil || len(results) != 1 || results[0].Status != 200 || results[0].ETag == "" {
		t.Errorf("UpdateActions: %+v %v", results, err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "fixes.ndjson")
	lines := []string{
		fmt.Sprintf(`{"id": %q, "if_match": %q, "patch": {"status": "checked"}}`, one.ID, got.ETag),
		fmt.Sprintf(`{"id": %q, "if_match": %q, "patch": {"status": "checked"}}`, two.ID, `"stale"`),
		`{"id": "x"`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := cli(t, dir, nil, "batch", "assets", file, "-patch")
	if code != 1 || !strings.Contains(stderr, "1 updated, 2 failed") {
		t.Errorf("batch -patch: exit %d, %s", code, stderr)
	}
	var outcomes []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("an outcome line %q: %v", l, err)
		}
		outcomes = append(outcomes, o)
	}
	if len(outcomes) != 3 || outcomes[1]["status"] != 200.0 || outcomes[1]["etag"] == nil || outcomes[2]["status"] != 412.0 {
		t.Errorf("batch -patch outcomes: %s", out)
	}
	if _, _, code := cli(t, dir, nil, "batch", "assets", file, "-patch", "-find"); code != 2 {
		t.Errorf("batch -patch -find: exit %d, want 2", code)
	}
}
