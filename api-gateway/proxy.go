package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// newProxy forwards to one service. The caller's token goes along (every
// service verifies it again), the request id and the trace context too.
func newProxy(target *url.URL) http.Handler {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 256 // the gateway talks to few hosts, a lot
	// No ResponseHeaderTimeout: each call's deadlines (upstream.go) bound
	// the wait by kind of request, counting only time spent on the service.
	// Without an exporter there are no client spans to make; the caller's
	// traceparent header is forwarded as it came, so a trace still
	// continues into the service.
	var roundTripper http.RoundTripper = transport
	if telemetry.TracingEnabled() {
		roundTripper = otelhttp.NewTransport(transport)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// Forward the path exactly as the client sent it, so problem
			// bodies from the service name the client's own path.
			pr.Out.URL.Path = strings.TrimSuffix(target.Path, "/") + httpx.RequestInfoFrom(pr.In.Context()).Path
			pr.Out.URL.RawPath = ""
			pr.SetXForwarded()
			// The gateway has answered the client's 100-continue itself
			// (net/http sends it as the body is first read). Passed on, it
			// makes a service that answers before reading the whole body
			// (413) close at once instead of lingering, and the gateway's
			// write of the rest then fails before the answer is read: a
			// 503 instead of the service's 413.
			pr.Out.Header.Del("Expect")
			// A small body read whole goes from memory, in the same write
			// as the header.
			if whole, ok := wholeBody(pr.In); ok {
				pr.Out.Body = io.NopCloser(bytes.NewReader(whole))
				// A chunked batch, read whole, goes with its length.
				pr.Out.ContentLength, pr.Out.TransferEncoding = int64(len(whole)), nil
			} else if c := callOf(pr.In); c != nil && pr.Out.Body != nil && pr.Out.Body != http.NoBody {
				pr.Out.Body = clientBody{pr.Out.Body, c.watch}
			}
		},
		Transport:  roundTripper,
		BufferPool: copyBuffers,
		ModifyResponse: func(resp *http.Response) error {
			// The gateway answers with its own id already (the same one).
			resp.Header.Del(httpx.RequestIDHeader)
			c := callOf(resp.Request)
			if c == nil || !c.charged {
				// Only a resource charged by size may declare a cost
				// (costly reads and strips it there); from any other the
				// declaration never reaches the client.
				resp.Header.Del(httpx.CostHeader)
			}
			if c != nil {
				c.watch.header()
				resp.Body = serviceBody{resp.Body, c.watch}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			c := callOf(r)
			if c != nil {
				c.err = err
			}
			// The client's own body failed first: over its limit (413)
			// or too slow (408). Neither is the service's fault, and
			// retrying would not help.
			if p := httpx.BodyProblem(errors.Join(err, bodyError(r))); p != nil {
				httpx.WriteProblem(r.Context(), p, w)
				return
			}
			service := ""
			if c != nil {
				service = c.service
			}
			if stalled(r) && (c == nil || c.client.Err() == nil) {
				httpx.WriteProblem(r.Context(), unavailable(service, err), w)
				return
			}
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				// The client left: nobody reads the answer, but the access
				// log and the metrics say 499 rather than a 200 never sent.
				httpx.WriteProblem(r.Context(), err, w)
				return
			}
			httpx.WriteProblem(r.Context(), unavailable(service, err), w)
		},
	}
}

// unavailable is the 503 of a call its service did not answer (down, not
// started yet, or too slow): the problem names the service, and the
// client retries after Retry-After.
func unavailable(service string, err error) error {
	if service == "" {
		return apperr.Unavailable("the service behind this path", err)
	}
	return apperr.Unavailable("the "+service+" service", err)
}

// copyBuffers lends the proxies the buffers they copy response bodies
// through; without a pool each response allocates a fresh 32 KiB one.
var copyBuffers = &bufferPool{}

type bufferPool struct{ pool sync.Pool }

func (b *bufferPool) Get() []byte {
	if buf, ok := b.pool.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.pool.Put(&buf) }
