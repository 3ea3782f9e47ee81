// The OpenAPI checker checks real HTTP traffic in tests against an OpenAPI
// 3.x document, so the document cannot drift from what the code does.
//
// Only responses are checked: tests send invalid requests on purpose (unknown
// fields, wrong media types), so request validation would fail where the
// service is right. A response is checked against the operation the request
// addresses: its status must be declared, and its headers and body must match
// what the document declares for that status. A request whose path or method
// the document does not have is an error, except when the answer is a 404 or
// a 405: tests probe unknown paths and methods on purpose, and the document
// cannot list them.
//
// Paths match regardless of scheme and host (tests reach servers at
// http://127.0.0.1:PORT), with or without a trailing slash, and after any
// base path the document's servers declare.
//
//	v := testkit.NewValidator(t, openAPIYAML)
//	client := &http.Client{Transport: v.Transport(t, http.DefaultTransport)}

package testkit

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/responses"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Validator checks responses against one OpenAPI document. It is safe for
// concurrent use.
type Validator struct {
	routes    []route
	basePaths []string

	mu        sync.Mutex // the response validator's caches are not documented as concurrency-safe
	responses responses.ResponseBodyValidator
}

// route is one path of the document, split into segments.
type route struct {
	template string
	segments []string
	item     *v3.PathItem
	literals int // how many segments are not parameters; more is more specific
}

// NewValidator parses the document (YAML or JSON) and fails the test on a
// bad document: one that does not parse, has unresolvable references, or
// does not validate against the OpenAPI schema of its version.
//
// A document is built once per test process and its Validator shared:
// building compiles every schema of the document, half of what starting a
// service costs a test, and a service package starts one per test against
// the same document.
func NewValidator(t testing.TB, doc []byte) *Validator {
	t.Helper()
	cached, _ := validators.LoadOrStore(sha256.Sum256(doc), &builtValidator{})
	b := cached.(*builtValidator)
	b.once.Do(func() { b.v, b.err = newValidator(doc) })
	if b.err != nil {
		t.Fatalf("openapitest: %v", b.err)
		return nil
	}
	return b.v
}

// validators holds a builtValidator per document, by the SHA-256 of its bytes.
var validators sync.Map

type builtValidator struct {
	once sync.Once
	v    *Validator
	err  error
}

func newValidator(doc []byte) (*Validator, error) {
	document, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("the document does not parse: %w", err)
	}
	model, err := document.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("the document is not a valid OpenAPI 3 model: %w", err)
	}
	opts := []config.Option{
		config.WithFormatAssertions(), // uuid, date, date-time, uri are asserted, not just annotations
	}
	full := validator.NewValidatorFromV3Model(&model.Model, opts...)
	full.SetDocument(document)
	if ok, errs := full.ValidateDocument(); !ok {
		return nil, fmt.Errorf("the document does not validate against the OpenAPI %s schema:\n%s",
			model.Model.Version, describe(errs))
	}

	v := &Validator{responses: full.GetResponseBodyValidator()}
	for _, s := range model.Model.Servers {
		if u, err := url.Parse(s.URL); err == nil {
			if base := strings.TrimSuffix(u.Path, "/"); base != "" && !strings.Contains(base, "{") {
				v.basePaths = append(v.basePaths, base)
			}
		}
	}
	if model.Model.Paths != nil {
		for pair := model.Model.Paths.PathItems.First(); pair != nil; pair = pair.Next() {
			r := route{template: pair.Key(), segments: split(pair.Key()), item: pair.Value()}
			for _, s := range r.segments {
				if !isParam(s) {
					r.literals++
				}
			}
			v.routes = append(v.routes, r)
		}
	}
	return v, nil
}

// Check validates a request/response pair; body is the response body
// already read (the response's Body may have been consumed). It reports
// every mismatch with t.Errorf, naming method, path, status and the
// validator's messages.
func (v *Validator) Check(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if req == nil || req.URL == nil || resp == nil {
		t.Errorf("openapitest: Check needs a request with a URL and a response")
		return
	}
	status := resp.StatusCode
	where := fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, status)
	probe := status == http.StatusNotFound || status == http.StatusMethodNotAllowed

	r, ok := v.match(req.URL.Path)
	if !ok {
		if !probe {
			t.Errorf("openapitest: %s: the path is not in the document", where)
		}
		return
	}
	if operation(r.item, req.Method) == nil {
		if !probe {
			t.Errorf("openapitest: %s: the document has no %s operation on %s", where, req.Method, r.template)
		}
		return
	}

	// The validator reads both: give it copies it may consume, with the
	// response body from the caller.
	vreq := req.Clone(req.Context())
	vreq.Body, vreq.GetBody, vreq.ContentLength = http.NoBody, nil, 0
	vresp := *resp
	vresp.Request = vreq
	vresp.Body = http.NoBody
	if len(body) > 0 {
		vresp.Body = io.NopCloser(bytes.NewReader(body))
	}

	v.mu.Lock()
	ok, errs := v.responses.ValidateResponseBodyWithPathItem(vreq, &vresp, r.item, r.template)
	v.mu.Unlock()
	if !ok {
		t.Errorf("openapitest: %s does not match the document (operation %s %s):\n%s\nbody: %s",
			where, req.Method, r.template, describe(errs), truncate(body, 2000))
	}
}

// Transport wraps an http.RoundTripper so that every response passing
// through is checked (it reads the body and restores it for the caller).
// For use as http.Client.Transport in tests.
func (v *Validator) Transport(t testing.TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: reading the response body of %s %s: %w", req.Method, req.URL, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		v.Check(t, req, resp, body)
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// match finds the document path for a request path: cleaned, without a
// trailing slash and without a server base path; literal segments win over
// parameters ("/organizations/find" over "/organizations/{id}").
func (v *Validator) match(requestPath string) (route, bool) {
	p := path.Clean("/" + requestPath)
	candidates := []string{p}
	for _, base := range v.basePaths {
		if rest, ok := strings.CutPrefix(p, base); ok && (rest == "" || rest[0] == '/') {
			candidates = append(candidates, path.Clean("/"+rest))
		}
	}
	var best route
	found := false
	for _, c := range candidates {
		segs := split(c)
		for _, r := range v.routes {
			if matches(r.segments, segs) && (!found || r.literals > best.literals) {
				best, found = r, true
			}
		}
	}
	return best, found
}

func split(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isParam(seg string) bool { return strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") }

func matches(template, segs []string) bool {
	if len(template) != len(segs) {
		return false
	}
	for i, t := range template {
		if isParam(t) {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if t != segs[i] {
			return false
		}
	}
	return true
}

// operation is the operation for method; HEAD falls back to GET, as
// net/http servers answer HEAD with the GET handler.
func operation(item *v3.PathItem, method string) *v3.Operation {
	switch method {
	case http.MethodGet:
		return item.Get
	case http.MethodHead:
		if item.Head != nil {
			return item.Head
		}
		return item.Get
	case http.MethodPost:
		return item.Post
	case http.MethodPut:
		return item.Put
	case http.MethodPatch:
		return item.Patch
	case http.MethodDelete:
		return item.Delete
	case http.MethodOptions:
		return item.Options
	case http.MethodTrace:
		return item.Trace
	}
	return nil
}

// describe renders validation errors one per line, with the schema
// failures under each.
func describe(errs []*errors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  - %s", e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			fmt.Fprintf(&b, ": %s", e.Reason)
		}
		if e.SpecLine > 0 {
			fmt.Fprintf(&b, " (document line %d)", e.SpecLine)
		}
		b.WriteByte('\n')
		for _, f := range e.SchemaValidationErrors {
			where := f.FieldPath
			if where == "" {
				where = "/" + strings.Join(f.InstancePath, "/")
			}
			fmt.Fprintf(&b, "      %s: %s", where, f.Reason)
			if f.KeywordLocation != "" {
				fmt.Fprintf(&b, " [%s]", f.KeywordLocation)
			}
			b.WriteByte('\n')
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func truncate(body []byte, n int) string {
	if len(body) <= n {
		return string(body)
	}
	return string(body[:n]) + "…"
}
