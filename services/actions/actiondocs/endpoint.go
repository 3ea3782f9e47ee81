package actiondocs

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of action documents that the adapters of pkg/endpoints do
// not make alone; the route table (transport.go) names the rest where it
// routes them.

// actionDocumentPath names one action document of one action, from the
// path, with the body of a PATCH when there is one: the request shape that
// is not among httpx's shared ones.
type actionDocumentPath struct {
	ActionID, ID uuid.UUID
	Patch        ActionDocumentPatch
}

// createActionDocument answers 201 with the action document's Location.
func createActionDocument(s Service) endpoint.Endpoint {
	return endpoints.Guarded(endpoints.Created(func(ctx context.Context, g model.Guard, req httpx.IDBody[ActionDocumentInput]) (ActionDocument, error) {
		return s.CreateActionDocument(ctx, g, req.ID, req.Body)
	}, actionDocumentLocation))
}

func updateActionDocument(s Service) endpoint.Endpoint {
	return endpoints.Guarded(func(ctx context.Context, g model.Guard, req actionDocumentPath) (ActionDocument, error) {
		return s.UpdateActionDocument(ctx, g, req.ActionID, req.ID, req.Patch)
	})
}

// deleteActionDocument answers 204.
func deleteActionDocument(s Service) endpoint.Endpoint {
	return endpoints.Guarded(func(ctx context.Context, g model.Guard, req actionDocumentPath) (any, error) {
		return httpx.NoContent{}, s.DeleteActionDocument(ctx, g, req.ActionID, req.ID)
	})
}

// actionDocumentLocation is the action document's own path: PATCH and
// DELETE answer there.
func actionDocumentLocation(d ActionDocument) string {
	return "/actions/" + d.ActionID.String() + "/action_documents/" + d.ID.String()
}
