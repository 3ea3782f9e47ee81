package sdktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// `registry passport-links` from a shell: create prints the link (its URL
// once) and writes its QR code as a PNG, `registry verify URL` fetches the
// passport through it without a token and says it is complete, list
// counts the fetch, and after delete the URL no longer verifies.
func TestPassportLinksCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		out, stderr, code := cli(t, dir, nil, args...)
		if code != 0 {
			t.Fatalf("registry %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return out
	}
	id := func(out string) string {
		var v struct{ ID string }
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
			t.Fatalf("no id in %s", out)
		}
		return v.ID
	}
	tag := fmt.Sprint(time.Now().UnixNano())
	assetType := id(run("asset_types", "create", "-data", `{"brand":"Passlift-`+tag+`","model":"P-1"}`))
	asset := id(run("assets", "create", "-data", `{"serial_number":"SN-`+tag+`","asset_type_id":"`+assetType+`"}`))
	c := newClient(t, nil)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if c.AssetPassport(t.Context(), asset, &bytes.Buffer{}) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no passport of the asset within 30 s")
		}
	}

	var link registry.PassportLink
	if err := json.Unmarshal([]byte(run("passport-links", "create", asset, "-qr", "label.png", "-qr-size", "256")), &link); err != nil || link.URL == "" {
		t.Fatalf("passport-links create: %+v %v", link, err)
	}
	f, err := os.Open(filepath.Join(dir, "label.png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil || img.Bounds().Dx() != 256 {
		t.Errorf("the QR code is not a 256-pixel PNG: %v", err)
	}
	if out := run("verify", link.URL); !strings.Contains(out, "verified:") || !strings.Contains(out, "complete") {
		t.Errorf("registry verify %s:\n%s", link.URL, out)
	}
	var listed []registry.PassportLink
	if err := json.Unmarshal([]byte(run("passport-links", "list", asset)), &listed); err != nil || len(listed) != 1 || listed[0].FetchCount != 1 {
		t.Errorf("passport-links list: %+v %v", listed, err)
	}
	run("passport-links", "delete", asset, link.ID)
	if _, stderr, code := cli(t, dir, nil, "verify", link.URL); code == 0 || !strings.Contains(stderr, "404") {
		t.Errorf("verify after delete: exit %d: %s", code, stderr)
	}
}
