package actions

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of actions: per route the operation's
// endpoint, its decoder and its rules (spec.go mounts it and the
// components' on one router).
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("POST", "/actions", endpoints.ByCaller(endpoints.Created(s.CreateAction, actionLocation)),
			httpx.Body[ActionInput], endpoints.IdempotencyKey),
		endpoints.On("POST", "/actions/find", endpoints.ByCaller(endpoints.FindOrCreate(s.FindAction, actionLocation)),
			httpx.Find[ActionInput](true), endpoints.IdempotencyKey),
		endpoints.On("POST", "/actions/batch", createActions(s), decodeActionsBatch, endpoints.IdempotencyKey),
		// Each item carries its own If-Match (if_match).
		endpoints.On("PATCH", "/actions/batch", endpoints.Guarded(endpoints.BatchPatch(s.UpdateActions)), endpoints.DecodeBatch, endpoints.OwnerOnly),
		endpoints.On("GET", "/actions", endpoints.ByCaller(endpoints.ListBy(s.ListActions)), decodeListActions),
		endpoints.On("GET", "/actions/{id}", endpoints.ByCaller(s.GetAction), httpx.PathID),
		endpoints.On("PATCH", "/actions/{id}", endpoints.Guarded(endpoints.ByID(s.UpdateAction)),
			httpx.PathIDBody[ActionPatch], endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("DELETE", "/actions/{id}", endpoints.Guarded(endpoints.NoContent(s.DeleteAction)),
			httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly),
	}
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
