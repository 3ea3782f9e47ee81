package documents

import (
	"context"
	"io"
	"net/http"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	Upload endpoint.Endpoint
	Get    endpoint.Endpoint
	// ActionDocuments is GET /documents/{id}/action_documents.
	ActionDocuments endpoint.Endpoint
	// FindBySHA256 is GET /documents?sha256=.
	FindBySHA256 endpoint.Endpoint
	Download     endpoint.Endpoint
	Delete       endpoint.Endpoint
	Visible      endpoint.Endpoint // internal: which documents the caller sees
}

// downloadRequest is a file download with its conditions.
type downloadRequest struct {
	ID          uuid.UUID
	Head        bool       // HEAD: headers only
	Range       *RangeSpec // nil: the whole file
	IfNoneMatch string
	IfRange     string
}

// fileResponse is a download's answer; the transport streams it.
type fileResponse struct {
	Document
	NotModified bool
	Range       *ByteRange    // a 206 of this range
	Body        io.ReadCloser // nil for HEAD and 304
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
// Uploads and downloads are bounded by their own limits (size, a minimum
// rate), not by the request timeout, so middleware meant for JSON calls
// is given separately.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		Upload: endpoints.ByCaller(endpoints.Created(s.Upload, func(d DocumentDetail) string {
			return "/documents/" + d.ID.String()
		})),
		Get: endpoints.ByCaller(s.Get),
		ActionDocuments: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req actionDocumentsRequest) (any, error) {
			r, err := s.ActionDocuments(ctx, by, req.ID, req.Page)
			return httpx.ListOf(r), err
		}),
		FindBySHA256: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req findRequest) (any, error) {
			r, err := s.FindBySHA256(ctx, by, req.SHA256, req.Page)
			return httpx.ListOf(r), err
		}),
		// The download's route streams through a server of its own (not
		// endpoints.Serve): its caller is read from the context.
		Download: endpoints.New(func(ctx context.Context, req downloadRequest) (fileResponse, error) {
			return download(ctx, s, endpoints.CallerOf(ctx), req)
		}),
		Delete:  endpoints.Guarded(endpoints.NoContent(s.Delete)),
		Visible: endpoints.ByCaller(s.Visible),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

// download decides, from the document's ETag, whether the client's copy is
// current (304) and whether its range applies (206, 416), and only then
// opens the object.
func download(ctx context.Context, s Service, by model.Caller, req downloadRequest) (fileResponse, error) {
	doc, err := s.Open(ctx, by, req.ID)
	if err != nil {
		return fileResponse{}, err
	}
	resp := fileResponse{Document: doc}
	tag := etagOf(doc)
	if req.IfNoneMatch != "" && model.WeakMatch(req.IfNoneMatch, tag) {
		resp.NotModified = true
		return resp, nil
	}
	if req.Range != nil && (req.IfRange == "" || req.IfRange == tag) {
		r, ok := req.Range.Resolve(doc.Size)
		if !ok {
			return fileResponse{}, apperr.New(apperr.KindRangeNotSatisfiable,
				"the range is outside the file's bytes").WithHeader("Content-Range", "bytes */"+itoa(doc.Size))
		}
		if r.Length() < doc.Size {
			resp.Range = &r
		}
	}
	if req.Head {
		return resp, nil
	}
	resp.Body, err = s.Read(ctx, doc, resp.Range)
	return resp, err
}

func etagOf(d Document) string { return `"` + d.SHA256 + `"` }

// isHead reports whether the request wants headers only.
func isHead(r *http.Request) bool { return r.Method == http.MethodHead }
