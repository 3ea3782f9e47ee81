package actiondocs

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	CreateActionDocument  endpoint.Endpoint
	CreateActionDocuments endpoint.Endpoint
	ListActionDocuments   endpoint.Endpoint
	UpdateActionDocument  endpoint.Endpoint
	DeleteActionDocument  endpoint.Endpoint

	DocumentsSeen endpoint.Endpoint // internal: the documents service's question
}

// actionDocumentPath names one action document of one action, from the
// path, with the body of a PATCH when there is one: the request shape that
// is not among httpx's shared ones.
type actionDocumentPath struct {
	ActionID, ID uuid.UUID
	Patch        ActionDocumentPatch
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateActionDocument: endpoints.Guarded(endpoints.Created(func(ctx context.Context, g model.Guard, req httpx.IDBody[ActionDocumentInput]) (ActionDocument, error) {
			return s.CreateActionDocument(ctx, g, req.ID, req.Body)
		}, actionDocumentLocation)),
		CreateActionDocuments: endpoints.Guarded(endpoints.Batch(s.CreateActionDocuments)),
		ListActionDocuments:   endpoints.ByCaller(endpoints.ListBy(s.ListActionDocuments)),
		UpdateActionDocument: endpoints.Guarded(func(ctx context.Context, g model.Guard, req actionDocumentPath) (ActionDocument, error) {
			return s.UpdateActionDocument(ctx, g, req.ActionID, req.ID, req.Patch)
		}),
		DeleteActionDocument: endpoints.Guarded(func(ctx context.Context, g model.Guard, req actionDocumentPath) (any, error) {
			return httpx.NoContent{}, s.DeleteActionDocument(ctx, g, req.ActionID, req.ID)
		}),

		DocumentsSeen: endpoints.New(s.DocumentsSeen),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

// actionDocumentLocation is the action document's own path: PATCH and
// DELETE answer there.
func actionDocumentLocation(d ActionDocument) string {
	return "/actions/" + d.ActionID.String() + "/action_documents/" + d.ID.String()
}
