package actions

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation. Each adapts a Service
// method and says which success status applies; everything HTTP-specific
// beyond that lives in the transport.
type Endpoints struct {
	CreateAction  endpoint.Endpoint
	FindAction    endpoint.Endpoint
	CreateActions endpoint.Endpoint
	GetAction     endpoint.Endpoint
	ListActions   endpoint.Endpoint
	UpdateAction  endpoint.Endpoint
	UpdateActions endpoint.Endpoint
	DeleteAction  endpoint.Endpoint

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

// actionsBatch is a batch of actions with its ?find flag.
type actionsBatch struct {
	endpoints.BatchRequest
	Find bool
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateAction: endpoints.ByCaller(endpoints.Created(s.CreateAction, actionLocation)),
		FindAction:   endpoints.ByCaller(endpoints.FindOrCreate(s.FindAction, actionLocation)),
		CreateActions: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req actionsBatch) (any, error) {
			return endpoints.Batch(func(ctx context.Context, by model.Caller, in []ActionInput, errs []error) ([]model.ItemOutcome, error) {
				return s.CreateActions(ctx, by, in, errs, req.Find)
			})(ctx, by, req.BatchRequest)
		}),
		GetAction:     endpoints.ByCaller(s.GetAction),
		ListActions:   endpoints.ByCaller(endpoints.ListBy(s.ListActions)),
		UpdateAction:  endpoints.Guarded(endpoints.ByID(s.UpdateAction)),
		DeleteAction:  endpoints.Guarded(endpoints.NoContent(s.DeleteAction)),
		UpdateActions: endpoints.Guarded(endpoints.BatchPatch(s.UpdateActions)),

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

func actionLocation(a ActionDetail) string { return "/actions/" + a.ID.String() }

// actionDocumentLocation is the action document's own path: PATCH and
// DELETE answer there.
func actionDocumentLocation(d ActionDocument) string {
	return "/actions/" + d.ActionID.String() + "/action_documents/" + d.ID.String()
}
