package actions

import (
	"net/http"
	"slices"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// NewHTTPHandler is the route table of actions and action documents. The
// token is verified before it (servicekit); each route checks its scope
// only once routing found it, so an unknown path or method is a 404 or 405
// whatever the token may do. Action documents have no GET of their own:
// they are read through their action (and their document).
func NewHTTPHandler(e Endpoints) *httpx.Router {
	r := httpx.NewRouter(auth.RequireScope)
	handle := r.Handle
	handle("POST", "/actions", endpoints.Serve(e.CreateAction, httpx.Body[ActionInput], endpoints.IdempotencyKey))
	handle("POST", "/actions/find", endpoints.Serve(e.FindAction, httpx.Find[ActionInput](true), endpoints.IdempotencyKey))
	handle("POST", "/actions/batch", endpoints.Serve(e.CreateActions, decodeActionsBatch, endpoints.IdempotencyKey))
	handle("GET", "/actions", endpoints.Serve(e.ListActions, decodeListActions))
	handle("GET", "/actions/{id}", endpoints.Serve(e.GetAction, httpx.PathID))
	handle("PATCH", "/actions/{id}", endpoints.Serve(e.UpdateAction, httpx.PathIDBody[ActionPatch], endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/actions/{id}", endpoints.Serve(e.DeleteAction, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly))

	// Before the routes of one action's documents: a literal segment is
	// matched before a parameter.
	handle("POST", "/actions/action_documents/batch", endpoints.Serve(e.CreateActionDocuments, endpoints.DecodeBatch, endpoints.IdempotencyKey, endpoints.OwnerOnly))
	handle("POST", "/actions/{action_id}/action_documents", endpoints.Serve(e.CreateActionDocument, decodeCreateActionDocument, endpoints.IdempotencyKey, endpoints.OwnerOnly))
	handle("GET", "/actions/{action_id}/action_documents", endpoints.Serve(e.ListActionDocuments, decodeListActionDocuments))
	handle("PATCH", "/actions/{action_id}/action_documents/{id}", endpoints.Serve(e.UpdateActionDocument, decodeActionDocumentPatch, endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/actions/{action_id}/action_documents/{id}", endpoints.Serve(e.DeleteActionDocument, decodeActionDocumentPath, endpoints.IfMatch, endpoints.OwnerOnly))

	handle("GET", "/compliance", endpoints.Serve(e.Compliance, decodeCompliance))
	// The same rows for the events service, which puts an asset's in its
	// passport (a peer's call, with the internal scope).
	handle("GET", auth.InternalPrefix+"compliance", endpoints.Serve(e.Compliance, decodeCompliance))
	handle("POST", DocumentsSeenPath, endpoints.Serve(e.DocumentsSeen, httpx.Body[DocumentsSeenRequest]))

	// Plans are an admin's to write. The presets' literal segment is
	// matched before a plan's id.
	handle("GET", "/inspection_plans/presets", endpoints.Serve(e.PlanPresets, decodeNothing))
	handle("POST", "/inspection_plans", endpoints.Serve(e.CreatePlan, httpx.Body[PlanInput], endpoints.IdempotencyKey, endpoints.AdminOnly))
	handle("GET", "/inspection_plans", endpoints.Serve(e.ListPlans, decodeListPlans))
	handle("GET", "/inspection_plans/{id}", endpoints.Serve(e.GetPlan, httpx.PathID))
	handle("PATCH", "/inspection_plans/{id}", endpoints.Serve(e.UpdatePlan, httpx.PathIDBody[PlanPatch], endpoints.IfMatch, endpoints.OwnerOnly, endpoints.AdminOnly))
	handle("DELETE", "/inspection_plans/{id}", endpoints.Serve(e.DeletePlan, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly, endpoints.AdminOnly))
	return r
}

func decodeListPlans(r *http.Request) (httpx.ListRequest[PlanFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "action_type", "asset_type_id", "asset_id")
	f := PlanFilter{ActionType: q.String("action_type"), AssetTypeID: q.UUID("asset_type_id"), AssetID: q.UUID("asset_id")}
	return httpx.ListRequest[PlanFilter]{Filter: f, Page: q.Page()}, q.Err()
}

// decodeNothing reads a request that carries nothing: no query, no body.
func decodeNothing(r *http.Request) (struct{}, error) { return struct{}{}, httpx.NoQuery(r) }

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

// decodeCompliance reads GET /compliance's filters; action_type and state
// may repeat.
func decodeCompliance(r *http.Request) (httpx.ListRequest[ComplianceFilter], error) {
	q := httpx.ParseQueryRepeating(r, []string{"action_type", "state", "include"}, "limit", "cursor", "asset_id", "asset_type_id",
		"action_type", "state", "due_before", "as_of", "include")
	f := ComplianceFilter{
		AssetID: q.UUID("asset_id"), AssetTypeID: q.UUID("asset_type_id"),
		ActionTypes: q.Strings("action_type"), States: q.Enums("state", States),
		DueBefore: q.Date("due_before"), AsOf: q.Date("as_of"),
		Components: slices.Contains(q.Enums("include", []string{"components"}), "components"),
	}
	return httpx.ListRequest[ComplianceFilter]{Filter: f, Page: q.Page()}, q.Err()
}

// decodeCreateActionDocument reads the path's action and the body; the
// path is checked first, so a malformed id is a 400 whatever the body.
func decodeCreateActionDocument(r *http.Request) (httpx.IDBody[ActionDocumentInput], error) {
	actionID, err := httpx.PathUUID(r, "action_id")
	if err != nil {
		return httpx.IDBody[ActionDocumentInput]{}, err
	}
	body, err := httpx.Body[ActionDocumentInput](r)
	return httpx.IDBody[ActionDocumentInput]{ID: actionID, Body: body}, err
}

// decodeListActionDocuments reads the path's action and the page; the path
// is checked first, so a malformed id is a 400 whatever the query.
func decodeListActionDocuments(r *http.Request) (httpx.ListRequest[ActionDocumentFilter], error) {
	actionID, err := httpx.PathUUID(r, "action_id")
	if err != nil {
		return httpx.ListRequest[ActionDocumentFilter]{}, err
	}
	q := httpx.ParseQuery(r, "limit", "cursor")
	return httpx.ListRequest[ActionDocumentFilter]{Filter: ActionDocumentFilter{ActionID: actionID}, Page: q.Page()}, q.Err()
}

// decodeActionDocumentPath reads the action's and the action document's
// ids; the operation takes no query parameters.
func decodeActionDocumentPath(r *http.Request) (actionDocumentPath, error) {
	actionID, err := httpx.PathUUID(r, "action_id")
	if err != nil {
		return actionDocumentPath{}, err
	}
	id, err := httpx.PathID(r)
	return actionDocumentPath{ActionID: actionID, ID: id}, err
}

func decodeActionDocumentPatch(r *http.Request) (actionDocumentPath, error) {
	req, err := decodeActionDocumentPath(r)
	if err != nil {
		return req, err
	}
	req.Patch, err = httpx.Body[ActionDocumentPatch](r)
	return req, err
}
