package httpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		typ        string
		retryAfter string
		check      func(t *testing.T, body map[string]any)
	}{
		{"not found", apperr.NotFound("person", "p1"), 404, "not-found", "", nil},
		{"invalid lists fields", apperr.Invalid(apperr.FieldError{Field: "name", Message: "is required"}), 422, "validation-failed", "",
			func(t *testing.T, b map[string]any) {
				errs := b["errors"].([]any)
				if len(errs) != 1 || errs[0].(map[string]any)["field"] != "name" {
					t.Errorf("errors = %v", b["errors"])
				}
			}},
		{"duplicate carries existing_id", apperr.Duplicate("exists", "abc"), 409, "duplicate", "",
			func(t *testing.T, b map[string]any) {
				if b["existing_id"] != "abc" || b["title"] != "Duplicate" {
					t.Errorf("body = %v", b)
				}
			}},
		{"unavailable has Retry-After", apperr.Unavailable("the database", errors.New("dial tcp 10.1.2.3:5432: refused")), 503, "unavailable", "5",
			func(t *testing.T, b map[string]any) {
				if strings.Contains(fmt.Sprint(b), "10.1.2.3") {
					t.Errorf("internal host leaked: %v", b)
				}
			}},
		{"unexpected errors hide their text", fmt.Errorf("pq: syntax error at SELECT"), 500, "internal", "",
			func(t *testing.T, b map[string]any) {
				if strings.Contains(fmt.Sprint(b), "SELECT") {
					t.Errorf("SQL leaked: %v", b)
				}
			}},
		{"field problems are capped", apperr.Invalid(manyFields(httpx.MaxFieldErrors + 7)...), 422, "validation-failed", "",
			func(t *testing.T, b map[string]any) {
				if errs := b["errors"].([]any); len(errs) != httpx.MaxFieldErrors || b["errors_omitted"] != float64(7) ||
					!strings.Contains(b["detail"].(string), "7 more") {
					t.Errorf("%d errors, errors_omitted %v, detail %q", len(errs), b["errors_omitted"], b["detail"])
				}
			}},
		{"a full list is not capped", apperr.Invalid(manyFields(httpx.MaxFieldErrors)...), 422, "validation-failed", "",
			func(t *testing.T, b map[string]any) {
				if errs := b["errors"].([]any); len(errs) != httpx.MaxFieldErrors || b["errors_omitted"] != nil {
					t.Errorf("%d errors, errors_omitted %v", len(errs), b["errors_omitted"])
				}
			}},
		{"a body that arrives too slowly", apperr.New(apperr.KindRequestTimeout, "slow"), 408, "request-timeout", "", nil},
		{"header fields over their limit", apperr.New(apperr.KindHeaderTooLarge, "big"), 431, "header-too-large", "", nil},
		{"standard members win over extensions", apperr.Conflict("x").With("status", 1), 409, "conflict", "",
			func(t *testing.T, b map[string]any) {
				if b["status"] != float64(409) {
					t.Errorf("status = %v", b["status"])
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := &httpx.RequestInfo{ID: "req-1", Path: "/people/p1/"}
			w := httptest.NewRecorder()
			httpx.WriteProblem(httpx.ContextWithRequestInfo(t.Context(), info), tt.err, w)
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d", w.Code, tt.status)
			}
			if ra := w.Header().Get("Retry-After"); ra != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", ra, tt.retryAfter)
			}
			body := problemOf(t, w)
			if body["type"] != httpx.ProblemTypePrefix+tt.typ || body["status"] != float64(tt.status) ||
				body["instance"] != "/people/p1/" || body["request_id"] != "req-1" || body["title"] == "" {
				t.Errorf("body = %v", body)
			}
			if info.Err() != tt.err {
				t.Error("the error was not recorded for the access log")
			}
			if tt.check != nil {
				tt.check(t, body)
			}
		})
	}
}

// A request whose client hung up fails with the cancellation of its
// context somewhere below: that is no internal error (a 500 in the logs
// and the metrics), but it is one when the request is still live.
func TestWriteForAClientThatHungUp(t *testing.T) {
	cancelled := fmt.Errorf("read reference targets: %w", context.Canceled)
	tests := []struct {
		name       string
		err        error
		clientGone bool
		status     int
		typ        string
	}{
		{"a client that hung up", cancelled, true, 499, "client-closed-request"},
		{"a cancellation under a live request", cancelled, false, 500, "internal"},
		{"a classified error of a client that hung up keeps its kind", apperr.Unavailable("the database", context.Canceled), true, 503, "unavailable"},
		{"another error of a client that hung up", errors.New("boom"), true, 500, "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := &httpx.RequestInfo{ID: "req-1", Path: "/actions"}
			ctx, cancel := context.WithCancel(httpx.ContextWithRequestInfo(t.Context(), info))
			defer cancel()
			if tt.clientGone {
				cancel()
			}
			w := httptest.NewRecorder()
			httpx.WriteProblem(ctx, tt.err, w)
			body := problemOf(t, w)
			if w.Code != tt.status || body["type"] != httpx.ProblemTypePrefix+tt.typ {
				t.Errorf("status %d, type %v; want %d, %s", w.Code, body["type"], tt.status, tt.typ)
			}
			// The access log and the metrics read the recorded error.
			if recorded := info.Err(); !errors.Is(recorded, tt.err) || httpx.StatusOf(recorded) != tt.status {
				t.Errorf("recorded %v (status %d)", recorded, httpx.StatusOf(recorded))
			}
		})
	}
}

// problemOf is the problem w answered: it says so in its Content-Type,
// and its body is one JSON object.
func problemOf(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != httpx.ProblemContentType {
		t.Errorf("Content-Type = %q, want %q", ct, httpx.ProblemContentType)
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	return body
}

func manyFields(n int) []apperr.FieldError {
	fields := make([]apperr.FieldError, n)
	for i := range fields {
		fields[i] = apperr.FieldError{Field: fmt.Sprintf("f%d", i), Message: "is not a known field"}
	}
	return fields
}
