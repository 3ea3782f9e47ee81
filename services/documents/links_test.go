package documents

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
)

// A document many action documents link: its answer holds the first
// model.MaxEmbedded in id order and says more exist, and the paged list
// gives every one of them.
func TestLinkingActionDocumentsAreCappedAndPaged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1<<20)
	var all []ActionDocument
	for range model.MaxEmbedded + 30 {
		all = append(all, ActionDocument{ID: uuid.Must(uuid.NewV7()), ActionID: uuid.New(), SourceSystem: "erp", SourceReference: "r"})
	}
	f.svc.(*service).links = func(context.Context, uuid.UUID) ([]ActionDocument, error) { return all, nil }
	doc := f.upload(t, "report", "r", "r", "")
	got, err := f.svc.Get(f.ctx, f.by, doc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ActionDocuments) != model.MaxEmbedded || !got.ActionDocumentsTruncated || got.ActionDocuments[0].ID != all[0].ID {
		t.Fatalf("the answer holds %d action documents (truncated %v); want the first %d and true",
			len(got.ActionDocuments), got.ActionDocumentsTruncated, model.MaxEmbedded)
	}
	var paged []ActionDocument
	page := model.Page{Limit: 11}
	for {
		p, err := f.svc.ActionDocuments(f.ctx, f.by, doc.ID, page)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, p.Items...)
		if p.Next == uuid.Nil {
			break
		}
		page.After = p.Next
	}
	if len(paged) != len(all) || paged[len(paged)-1].ID != all[len(all)-1].ID {
		t.Errorf("paging gave %d action documents, want all %d", len(paged), len(all))
	}
	if _, err := f.svc.ActionDocuments(f.ctx, f.by, uuid.New(), model.Page{Limit: 10}); err == nil {
		t.Error("an unknown document's action documents: no error")
	}
}
