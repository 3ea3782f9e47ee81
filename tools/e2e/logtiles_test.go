package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assetregistry/registry/tools/testkit"
)

// The log as the Go checksum database's tools read it, through the
// gateway and without a token: the checkpoint as text, the tiles of
// hashes (full ones cached for good, partial ones briefly, each with a
// strong ETag that a cache revalidates with), and the proof
// of an event's leaf made from them alone; the entry itself stays behind a
// token.
func TestLogTilesThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": unique("Tiles"), "model": "T-1"}), 201)
	var keys struct{ Keys []string }
	if err := json.Unmarshal(testkit.Expect(t, gw.Do(t, "GET", "/log/keys", "", nil), 200).Raw, &keys); err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(keys.Keys[0])
	if err != nil {
		t.Fatal(err)
	}
	var tree tlog.Tree
	for deadline := time.Now().Add(30 * time.Second); tree.N == 0; time.Sleep(200 * time.Millisecond) {
		r := gw.Do(t, "GET", "/log/checkpoint", "", nil, "Accept", "text/plain")
		if r.Status == 200 {
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
				t.Fatalf("checkpoint as text: %s", r.Header.Get("Content-Type"))
			}
			n, err := note.Open(r.Raw, note.VerifierList(verifier))
			if err != nil {
				t.Fatalf("checkpoint %q: %v", r.Raw, err)
			}
			lines := strings.Split(n.Text, "\n")
			tree.N, _ = strconv.ParseInt(lines[1], 10, 64)
			if tree.Hash, err = tlog.ParseHash(lines[2]); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint within 30 s: %d %s", r.Status, r.Raw)
		}
	}
	hashes := tlog.TileHashReader(tree, gatewayTiles{t})
	leaf := tree.N - 1
	var entry struct{ Entry string }
	path := "/log/entry?leaf_index=" + strconv.FormatInt(leaf, 10)
	testkit.Expect(t, gw.Do(t, "GET", path, "", nil), 401)
	if err := json.Unmarshal(testkit.Expect(t, gw.Do(t, "GET", path, ro, nil), 200).Raw, &entry); err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(entry.Entry)
	proof, err := tlog.ProveRecord(tree.N, leaf, hashes)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckRecord(proof, tree.N, tree.Hash, leaf, tlog.RecordHash(raw)); err != nil {
		t.Errorf("leaf %d: %v", leaf, err)
	}
	testkit.Expect(t, gw.Do(t, "GET", "/log/tile/entries/000", "", nil), 404)
}

// gatewayTiles reads tiles through the gateway without a token.
type gatewayTiles struct{ t *testing.T }

func (gatewayTiles) Height() int { return 8 }

func (g gatewayTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tile := range tiles {
		path := "/log/tile/" + strings.TrimPrefix(tile.Path(), "tile/8/")
		r := gateway().Do(g.t, "GET", path, "", nil)
		if r.Status != 200 {
			return nil, fmt.Errorf("%s: %d %s", path, r.Status, r.Raw)
		}
		want := "public, max-age=10"
		if tile.W == 256 {
			want = "public, max-age=31536000, immutable"
		}
		if got := r.Header.Get("Cache-Control"); got != want {
			g.t.Errorf("%s: Cache-Control %q, want %q", path, got, want)
		}
		// A cache that holds the tile revalidates it with its strong ETag.
		if tag := r.Header.Get("ETag"); tag == "" {
			g.t.Errorf("%s: no ETag", path)
		} else if again := gateway().Do(g.t, "GET", path, "", nil, "If-None-Match", tag); again.Status != 304 || len(again.Raw) != 0 {
			g.t.Errorf("%s with If-None-Match %s: %d, %d bytes; want a 304", path, tag, again.Status, len(again.Raw))
		}
		out[i] = r.Raw
	}
	return out, nil
}

func (gatewayTiles) SaveTiles([]tlog.Tile, [][]byte) {}
