package documents

import (
	"context"
	"io"
	"net/http"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of documents that the adapters of pkg/endpoints do not
// make alone; the route tables (transport.go) name the rest where they
// route them.

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

// downloadFile streams a document's bytes through a server of its own
// (not endpoints.Serve), so its caller is read from the context.
func downloadFile(s Service) endpoint.Endpoint {
	return endpoints.New(func(ctx context.Context, req downloadRequest) (fileResponse, error) {
		return download(ctx, s, endpoints.CallerOf(ctx), req)
	})
}

func documentLocation(d DocumentDetail) string { return "/documents/" + d.ID.String() }

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
