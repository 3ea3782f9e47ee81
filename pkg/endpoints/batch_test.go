package endpoints_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/model"
)

// Each outcome becomes the status its item alone would have got: an id for
// a create (201) or a find (200), a problem for an error.
func TestBatchResults(t *testing.T) {
	id := uuid.New()
	tests := []struct {
		name    string
		outcome model.ItemOutcome
		status  int
		problem bool
	}{
		{"created", model.ItemOutcome{ID: id, Created: true}, 201, false},
		{"found", model.ItemOutcome{ID: id}, 200, false},
		{"a field", model.ItemOutcome{Err: apperr.Invalid(apperr.FieldError{Field: "asset_id", Message: "must name an existing asset"})}, 422, true},
		{"a duplicate", model.ItemOutcome{Err: apperr.Duplicate("exists", id.String())}, 409, true},
		{"not ours", model.ItemOutcome{Err: errors.New("SELECT failed on host db-1")}, 500, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := endpoints.BatchResults(context.Background(), []model.ItemOutcome{tt.outcome})[0]
			if r.Status != tt.status || (r.Problem != nil) != tt.problem || (r.ID != nil) == tt.problem {
				t.Fatalf("result = %+v", r)
			}
			if tt.problem && r.Problem.Status != tt.status {
				t.Errorf("problem status %d", r.Problem.Status)
			}
			raw, _ := json.Marshal(r)
			if tt.status == 500 && strings.Contains(string(raw), "db-1") {
				t.Errorf("an internal error leaks: %s", raw)
			}
		})
	}
}

// A batch holds 1 to MaxBatch items; each item is decoded on its own.
func TestDecodeItems(t *testing.T) {
	type item struct {
		Name string `json:"name"`
	}
	in, errs := endpoints.DecodeItems[item]([]json.RawMessage{[]byte(`{"name":"a"}`), []byte(`{"nme":"b"}`), []byte(`[1]`)})
	if errs[0] != nil || in[0].Name != "a" {
		t.Errorf("item 0: %v %v", in[0], errs[0])
	}
	if apperr.KindOf(errs[1]) != apperr.KindInvalid {
		t.Errorf("item 1 (unknown field): %v", errs[1])
	}
	if errs[2] == nil {
		t.Errorf("item 2 (not an object) decoded")
	}
}
