package actiondocs

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the routes of action documents to r (the actions' router).
// Action documents have no GET of their own: they are read through their
// action (and their document). The batch's literal segment is matched
// before an action's id.
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	handle("POST", "/actions/action_documents/batch", endpoints.Serve(e.CreateActionDocuments, endpoints.DecodeBatch, endpoints.IdempotencyKey, endpoints.OwnerOnly))
	handle("POST", "/actions/{action_id}/action_documents", endpoints.Serve(e.CreateActionDocument, decodeCreateActionDocument, endpoints.IdempotencyKey, endpoints.OwnerOnly))
	handle("GET", "/actions/{action_id}/action_documents", endpoints.Serve(e.ListActionDocuments, decodeListActionDocuments))
	handle("PATCH", "/actions/{action_id}/action_documents/{id}", endpoints.Serve(e.UpdateActionDocument, decodeActionDocumentPatch, endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/actions/{action_id}/action_documents/{id}", endpoints.Serve(e.DeleteActionDocument, decodeActionDocumentPath, endpoints.IfMatch, endpoints.OwnerOnly))

	handle("POST", DocumentsSeenPath, endpoints.Serve(e.DocumentsSeen, httpx.Body[DocumentsSeenRequest]))
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
