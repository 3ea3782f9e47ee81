package actiondocs

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of action documents (mounted on the actions'
// router): per route the operation's endpoint, its decoder and its rules.
// Action documents have no GET of their own: they are read through their
// action (and their document). The batch's literal segment is matched
// before an action's id.
func Routes(s Service) []endpoints.Route {
	const one = "/actions/{action_id}/action_documents/{id}"
	return []endpoints.Route{
		endpoints.On("POST", "/actions/action_documents/batch", endpoints.Guarded(endpoints.Batch(s.CreateActionDocuments)),
			endpoints.DecodeBatch, endpoints.IdempotencyKey, endpoints.OwnerOnly),
		endpoints.On("POST", "/actions/{action_id}/action_documents", createActionDocument(s),
			decodeCreateActionDocument, endpoints.IdempotencyKey, endpoints.OwnerOnly),
		endpoints.On("GET", "/actions/{action_id}/action_documents", endpoints.ByCaller(endpoints.ListBy(s.ListActionDocuments)),
			decodeListActionDocuments),
		endpoints.On("PATCH", one, updateActionDocument(s), decodeActionDocumentPatch, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("DELETE", one, deleteActionDocument(s), decodeActionDocumentPath, endpoints.IfMatch, endpoints.OwnerOnly),

		endpoints.On("POST", DocumentsSeenPath, endpoints.New(s.DocumentsSeen), httpx.Body[DocumentsSeenRequest]),
	}
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
