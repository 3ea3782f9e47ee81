package e2e

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a minimal OTLP/HTTP trace collector: the processes under
// test export their spans to it exactly as they would to a real collector.
type otlpReceiver struct {
	URL string
	srv *httptest.Server

	mu    sync.Mutex
	spans []span
}

type span struct {
	Service, Name, Kind     string
	TraceID, SpanID, Parent string
	Attributes              map[string]string
}

func startOTLPReceiver() *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.export))
	r.URL = r.srv.URL
	return r
}

func (r *otlpReceiver) Close() { r.srv.Close() }

func (r *otlpReceiver) export(w http.ResponseWriter, req *http.Request) {
	body := io.Reader(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []span
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				attrs := map[string]string{}
				for _, a := range s.GetAttributes() {
					attrs[a.GetKey()] = a.GetValue().GetStringValue()
				}
				got = append(got, span{
					Service: service, Name: s.GetName(), Kind: s.GetKind().String(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Parent: hex.EncodeToString(s.GetParentSpanId()), Attributes: attrs,
				})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	resp, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// trace returns the spans of one trace received so far.
func (r *otlpReceiver) trace(traceID string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}
