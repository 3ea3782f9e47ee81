package documents

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// GET /documents?sha256=: the documents with those bytes, in id order,
// paged; a sum that is not 64 lowercase hex digits is a 422 naming it.
func TestFindBySHA256(t *testing.T) {
	s := servicetest.Start(t, Spec())
	upload := func(content string) string {
		body, ctype := testkit.Multipart(t, typePart("expert_control_report"), filePart("r.txt", "text/plain", content))
		return s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", ctype).JSON()["id"].(string)
	}
	same := []string{upload("the same bytes"), upload("the same bytes"), upload("the same bytes")}
	other := upload("other bytes")
	sum := sha256.Sum256([]byte("the same bytes"))
	hexSum := hex.EncodeToString(sum[:])

	var got []string
	path := "/documents?sha256=" + hexSum + "&limit=2"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("the pages do not end")
		}
		r := s.Call(200, "GET", path, s.RO, nil)
		for _, d := range r.List() {
			if d["sha256"] != hexSum {
				t.Errorf("a document of sum %v among those of %s", d["sha256"], hexSum)
			}
			got = append(got, d["id"].(string))
		}
		path = nextPath(r.Header)
	}
	if !slices.Equal(got, same) {
		t.Errorf("found %v, want %v (in id order, not %s)", got, same, other)
	}
	otherSum := sha256.Sum256([]byte("nothing uploaded"))
	if l := s.Call(200, "GET", "/documents?sha256="+hex.EncodeToString(otherSum[:]), s.RO, nil).List(); len(l) != 0 {
		t.Errorf("a sum nobody uploaded found %v", l)
	}
	for _, bad := range []string{"", "?sha256=" + strings.ToUpper(hexSum), "?sha256=" + hexSum[:63], "?sha256=" + hexSum + "0", "?sha256=" + hexSum[:63] + "g"} {
		r := s.Call(422, "GET", "/documents"+bad, s.RO, nil)
		if !slices.Equal(r.Fields(), []string{"sha256"}) {
			t.Errorf("GET /documents%s: the problem names %v, want sha256", bad, r.Fields())
		}
	}
}

// nextPath is the path and query of a Link: rel="next", "" without one.
func nextPath(h http.Header) string {
	for _, l := range h.Values("Link") {
		if start, end := strings.Index(l, "<"), strings.Index(l, ">"); start >= 0 && end > start && strings.Contains(l, `rel="next"`) {
			return l[start+1 : end]
		}
	}
	return ""
}
