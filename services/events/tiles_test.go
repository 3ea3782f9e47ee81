package events

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// The log read as a standard tool reads it: its checkpoint as text and its
// tiles of hashes over HTTP, without a token, with nothing but the Go
// checksum database's libraries (sumdb/note, sumdb/tlog) and the standard
// library; the leaf hash of an event is RFC 6962's of its bytes as the
// entry answers them. Three levels of tiles (past 65,536 leaves), full and
// partial, and a tree proof from an earlier checkpoint.
func TestTilesReadByTheGoChecksumDatabasesTools(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	first := event("organization", "created", uuid.NewString())
	publish(t, s, first)
	sign(t, s, keys)
	early := fetchCheckpoint(t, s, keys.Public()[0])
	filler := make([][]byte, 70_000)
	for i := range filler {
		filler[i] = []byte(fmt.Sprintf(`{"filler":%d}`, i))
	}
	if err := newTestStore(s).AppendEntries(t.Context(), filler); err != nil {
		t.Fatal(err)
	}
	last := event("asset", "created", uuid.NewString())
	publish(t, s, last, event("asset", "updated", uuid.NewString()))
	sign(t, s, keys)

	// From here on: only the libraries of the Go checksum database.
	tree := fetchCheckpoint(t, s, keys.Public()[0])
	if tree.N != 70_003 {
		t.Fatalf("checkpoint of %d leaves, want 70003", tree.N)
	}
	reader := &httpTiles{t: t, base: s.Client.BaseURL + "/log/"}
	hashes := tlog.TileHashReader(tree, reader)
	for _, leaf := range []int64{0, 70_001} {
		entry := fetchEntry(t, s, leaf)
		proof, err := tlog.ProveRecord(tree.N, leaf, hashes)
		if err != nil {
			t.Fatalf("prove leaf %d from the tiles: %v", leaf, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, leaf, tlog.RecordHash(entry)); err != nil {
			t.Errorf("leaf %d: %v", leaf, err)
		}
		if tlog.CheckRecord(proof, tree.N, tree.Hash, leaf, tlog.RecordHash(append(entry, ' '))) == nil {
			t.Errorf("leaf %d: a changed entry was proved", leaf)
		}
	}
	grown, err := tlog.ProveTree(tree.N, early.N, hashes)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(grown, tree.N, tree.Hash, early.N, early.Hash); err != nil {
		t.Errorf("the tree of %d leaves is no prefix of the one of %d: %v", early.N, tree.N, err)
	}
	for path, caching := range reader.caching {
		full := !strings.Contains(path, ".p/")
		if full != (caching == "public, max-age=31536000, immutable") || !full && caching != "public, max-age=10" {
			t.Errorf("%s: Cache-Control %q", path, caching)
		}
	}
	if _, ok := reader.caching["tile/2/000.p/1"]; !ok || len(reader.caching) < 4 {
		t.Errorf("read %d tiles, want full and partial ones of three levels: %v", len(reader.caching), reader.caching)
	}

	plain := testkit.Client{BaseURL: s.Client.BaseURL}
	// Each tile carries a strong ETag of its bytes; a client that holds
	// it is answered 304 (a full tile's, kept in memory, and a partial one's).
	for _, path := range []string{"/log/tile/0/000", "/log/tile/0/273.p/115"} {
		r := testkit.Expect(t, plain.Do(t, "GET", path, "", nil), 200)
		sum := sha256.Sum256(r.Raw)
		tag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
		if r.Header.Get("ETag") != tag {
			t.Errorf("%s: ETag %q, want %s, of its bytes", path, r.Header.Get("ETag"), tag)
		}
		again := testkit.Expect(t, plain.Do(t, "GET", path, "", nil, "If-None-Match", tag), 304)
		if len(again.Raw) != 0 || again.Header.Get("ETag") != tag || again.Header.Get("Cache-Control") != r.Header.Get("Cache-Control") {
			t.Errorf("%s: 304 with %d bytes, ETag %q, Cache-Control %q", path, len(again.Raw), again.Header.Get("ETag"), again.Header.Get("Cache-Control"))
		}
		testkit.Expect(t, plain.Do(t, "GET", path, "", nil, "If-None-Match", `"another"`), 200)
	}
	for _, path := range []string{
		"0/273",       // past the signed tree
		"0/273.p/116", // wider than the tree
		"1/001.p/18",  // idem, a level up
		"3/000.p/1",   // a level the tree does not reach
		"entries/000", // the events' bytes: never
		"0/x000/001",  // a group of zeros in front
		"0/1",         // not three digits
		"0/000.p/0",   // an empty tile
		"0/000.p/256", // a partial tile as wide as a full one
		"00/000",      // a level with a zero in front
		"0/001.p/05",  // a width with a zero in front
		"0/x001/x002/x003/x004/x005/x006/x007/000", // beyond any tree
	} {
		if r := plain.Do(t, "GET", "/log/tile/"+path, "", nil); r.Status != 404 {
			t.Errorf("tile %s: %d, want 404", path, r.Status)
		}
	}
	if r := plain.Do(t, "GET", "/log/tile/0/000?x=1", "", nil); r.Status != 400 {
		t.Errorf("a tile with a query: %d, want 400", r.Status)
	}
	// JSON stays the answer for a client that does not ask for text.
	for _, accept := range []string{"", "*/*", "application/json", "application/json, text/plain", "text/plain;q=0.5, application/json"} {
		r := plain.Do(t, "GET", "/log/checkpoint", "", nil, "Accept", accept)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("Accept %q: %d %s", accept, r.Status, r.Header.Get("Content-Type"))
		}
	}
}

// fetchCheckpoint reads the checkpoint as text (C2SP tlog-checkpoint),
// checks its signature with the verifier key vkey and reads its tree.
func fetchCheckpoint(t *testing.T, s *servicetest.Service, vkey string) tlog.Tree {
	t.Helper()
	text := []byte(fetchCheckpointText(t, s))
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(text, note.VerifierList(verifier))
	if err != nil {
		t.Fatalf("checkpoint %q: %v", text, err)
	}
	lines := strings.Split(n.Text, "\n")
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || lines[0] != verifier.Name() {
		t.Fatalf("checkpoint text %q", n.Text)
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		t.Fatal(err)
	}
	return tlog.Tree{N: size, Hash: root}
}

// fetchEntry is a leaf's bytes, as /log/entry answers them (behind a
// token).
func fetchEntry(t *testing.T, s *servicetest.Service, leaf int64) []byte {
	t.Helper()
	var entry struct {
		Entry string `json:"entry"`
	}
	if err := json.Unmarshal(s.Call(200, "GET", "/log/entry?leaf_index="+strconv.FormatInt(leaf, 10), s.RO, nil).Raw, &entry); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(entry.Entry)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// httpTiles is a tlog.TileReader of the tiles served at base, without a
// token; it keeps the Cache-Control of each tile read.
type httpTiles struct {
	t       *testing.T
	base    string
	caching map[string]string
}

func (r *httpTiles) Height() int { return 8 }

func (r *httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tile := range tiles {
		// tlog names a tile tile/<H>/<L>/<N>; C2SP tlog-tiles leaves the
		// height out.
		path := "tile/" + strings.TrimPrefix(tile.Path(), "tile/8/")
		resp, err := http.Get(r.base + path)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
		if r.caching == nil {
			r.caching = map[string]string{}
		}
		r.caching[path] = resp.Header.Get("Cache-Control")
		out[i] = body
	}
	return out, nil
}

func (r *httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}
