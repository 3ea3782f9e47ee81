package assets

import (
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// More documents attached than an answer embeds: the asset type's answer
// holds the first model.MaxEmbedded in attach order and says more exist,
// GET /asset_types/{id}/documents pages through every one, and the
// attach's event carries the capped answer.
func TestAttachedDocumentsAreCappedAndPaged(t *testing.T) {
	s := servicetest.Start(t, Spec())
	path := "/asset_types/" + s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	var want []string
	for range model.MaxEmbedded + 15 {
		doc := addDocument(s, "application/pdf")
		s.Call(201, "POST", path+"/documents", s.RW, map[string]any{"document_id": doc})
		want = append(want, doc)
	}
	got := s.Call(200, "GET", path, s.RW, nil).JSON()
	docs, _ := got["documents"].([]any)
	if len(docs) != model.MaxEmbedded || got["documents_truncated"] != true {
		t.Fatalf("documents holds %d, documents_truncated = %v; want %d and true", len(docs), got["documents_truncated"], model.MaxEmbedded)
	}
	var paged []string
	for next := path + "/documents?limit=9"; next != ""; {
		page := s.Call(200, "GET", next, s.RO, nil)
		for _, d := range page.List() {
			paged = append(paged, d["id"].(string))
		}
		next = strings.TrimSuffix(strings.TrimPrefix(page.Header.Get("Link"), "<"), `>; rel="next"`)
	}
	if strings.Join(paged, ",") != strings.Join(want, ",") {
		t.Errorf("paging gave %d documents, want all %d in attach order", len(paged), len(want))
	}
	s.Call(404, "GET", "/asset_types/"+want[0]+"/documents", s.RO, nil)
}
