package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// MaxBatch is how many items one batch may carry.
const MaxBatch = 1000

// BatchRequest is the body of a POST /<resources>/batch: {"items": [...]},
// each item the body its single create takes. Items are kept raw so that
// each is decoded on its own: a malformed item is that item's 422, not the
// whole batch's.
type BatchRequest struct {
	Items []json.RawMessage `json:"items"`
}

// DecodeBatch reads a batch's body (the 1 MiB limit of every JSON body
// holds for the whole batch): no items, or more than MaxBatch, is a 422.
// The operation takes no query parameters.
func DecodeBatch(r *http.Request) (BatchRequest, error) {
	if err := httpx.NoQuery(r); err != nil {
		return BatchRequest{}, err
	}
	return BatchBody(r)
}

// BatchBody is DecodeBatch for an operation that reads its own query
// parameters first.
func BatchBody(r *http.Request) (BatchRequest, error) {
	var req BatchRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return req, err
	}
	if len(req.Items) == 0 || len(req.Items) > MaxBatch {
		return req, apperr.Invalid(apperr.FieldError{Field: "items", Message: fmt.Sprintf("must hold 1 to %d items; it holds %d", MaxBatch, len(req.Items))})
	}
	return req, nil
}

// DecodeItems decodes each item strictly, as its single create's body
// would be: items[i] is in[i] when errs[i] is nil. The items are those of
// a body BatchBody read, which DecodeJSON checked whole.
func DecodeItems[In any](items []json.RawMessage) (in []In, errs []error) {
	in, errs = make([]In, len(items)), make([]error, len(items))
	for i, raw := range items {
		errs[i] = httpx.DecodeJSONItem(raw, &in[i])
	}
	return in, errs
}

// BatchResult is one item's outcome: the status the item alone would have
// got, with the id of what it created or found, or the problem it would
// have been answered with.
type BatchResult struct {
	Status  int            `json:"status"`
	ID      *uuid.UUID     `json:"id,omitempty"`
	ETag    string         `json:"etag,omitempty"` // an updated item's new ETag
	Problem *httpx.Problem `json:"problem,omitempty"`
}

// BatchResults renders the outcomes in order, each error as the problem
// the item alone would have been answered with.
func BatchResults(ctx context.Context, outcomes []model.ItemOutcome) []BatchResult {
	results := make([]BatchResult, len(outcomes))
	for i, o := range outcomes {
		switch {
		case o.Err != nil:
			p := httpx.ProblemFrom(ctx, o.Err)
			if p.Status >= 500 {
				// An item's own failure is told only as a request id; its
				// cause goes to the access log, as a whole request's would.
				httpx.RequestInfoFrom(ctx).SetErr(fmt.Errorf("batch item %d: %w", i, o.Err))
			}
			results[i] = BatchResult{Status: p.Status, Problem: &p}
		case o.Created:
			results[i] = BatchResult{Status: http.StatusCreated, ID: &o.ID}
		default:
			results[i] = BatchResult{Status: http.StatusOK, ID: &o.ID, ETag: o.ETag}
		}
	}
	return results
}

// Batch adapts a service's batch method (R is its model.Caller) to an
// endpoint answering 200 with the results in order, whatever each item's
// outcome.
func Batch[R, In any](create func(context.Context, R, []In, []error) ([]model.ItemOutcome, error)) func(context.Context, R, BatchRequest) (any, error) {
	return batchOf(DecodeItems[In], create)
}

// batchOf adapts a batch write to an endpoint: the items decoded each on
// its own by decode, written by write, answered in order.
func batchOf[R, In any](decode func([]json.RawMessage) ([]In, []error),
	write func(context.Context, R, []In, []error) ([]model.ItemOutcome, error)) func(context.Context, R, BatchRequest) (any, error) {
	return func(ctx context.Context, rules R, req BatchRequest) (any, error) {
		in, errs := decode(req.Items)
		outcomes, err := write(ctx, rules, in, errs)
		if err != nil {
			return nil, err
		}
		return BatchResults(ctx, outcomes), nil
	}
}
