package actions

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// NewHTTPHandler is the route table of actions; the components add theirs
// (spec.go). The
// token is verified before it (servicekit); each route checks its scope
// only once routing found it, so an unknown path or method is a 404 or 405
// whatever the token may do.
func NewHTTPHandler(e Endpoints) *httpx.Router {
	r := httpx.NewRouter(auth.RequireScope)
	handle := r.Handle
	handle("POST", "/actions", endpoints.Serve(e.CreateAction, httpx.Body[ActionInput], endpoints.IdempotencyKey))
	handle("POST", "/actions/find", endpoints.Serve(e.FindAction, httpx.Find[ActionInput](true), endpoints.IdempotencyKey))
	handle("POST", "/actions/batch", endpoints.Serve(e.CreateActions, decodeActionsBatch, endpoints.IdempotencyKey))
	// Each item carries its own If-Match (if_match).
	handle("PATCH", "/actions/batch", endpoints.Serve(e.UpdateActions, endpoints.DecodeBatch, endpoints.OwnerOnly))
	handle("GET", "/actions", endpoints.Serve(e.ListActions, decodeListActions))
	handle("GET", "/actions/{id}", endpoints.Serve(e.GetAction, httpx.PathID))
	handle("PATCH", "/actions/{id}", endpoints.Serve(e.UpdateAction, httpx.PathIDBody[ActionPatch], endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/actions/{id}", endpoints.Serve(e.DeleteAction, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly))
	return r
}

func decodeListActions(r *http.Request) (httpx.ListRequest[ActionFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "asset_id", "person_id", "organization_id", "action_type", "status_ok",
		"status_finalized", "valid_through_before", "performed_from", "performed_to", "source_system", "source_reference")
	f := ActionFilter{
		AssetID: q.UUID("asset_id"), PersonID: q.UUID("person_id"), OrganizationID: q.UUID("organization_id"),
		ActionType: q.String("action_type"), StatusOK: q.Bool("status_ok"), StatusFinalized: q.Bool("status_finalized"),
		ValidThroughBefore: q.Date("valid_through_before"), PerformedFrom: q.Date("performed_from"), PerformedTo: q.Date("performed_to"),
		SourceSystem: q.String("source_system"), SourceReference: q.String("source_reference"),
	}
	// A source reference means nothing without its system.
	if f.SourceReference != nil && f.SourceSystem == nil {
		q.Invalid("source_system", "is required with source_reference")
	}
	return httpx.ListRequest[ActionFilter]{Filter: f, Page: q.Page()}, q.Err()
}

// decodeActionsBatch reads a batch of actions and ?find=true|false.
func decodeActionsBatch(r *http.Request) (actionsBatch, error) {
	q := httpx.ParseQuery(r, "find")
	var req actionsBatch
	if find := q.Bool("find"); find != nil {
		req.Find = *find
	}
	if err := q.Err(); err != nil {
		return req, err
	}
	var err error
	req.BatchRequest, err = endpoints.BatchBody(r)
	return req, err
}
