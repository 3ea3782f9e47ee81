package servicetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/store"
)

// RoutesMatchDocument keeps the router and the API document in step: every
// public route the service registers is documented, and every documented
// operation is a route. It reads the router's own route table (the
// handlers are built over no datastore; building must not touch one).
// Internal routes are for peers only and stay out of the document.
func RoutesMatchDocument(t *testing.T, spec servicekit.Spec) {
	t.Helper()
	handlers, err := spec.Build(servicekit.Deps{Store: store.New(nil, nil), Logger: log.NewNopLogger(), RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string][]string{}
	anonymous := map[string]bool{}
	var routes []string
	for _, r := range handlers.Routes.Routes() {
		if strings.HasPrefix(r.Pattern, auth.InternalPrefix) {
			continue
		}
		// A route's trailing wildcard ("{tile...}", the rest of the path)
		// is a parameter like any other in the document.
		r.Pattern = strings.Replace(r.Pattern, "...}", "}", 1)
		routes = append(routes, r.Method+" "+r.Pattern)
		var headers []string
		for _, rule := range r.Rules {
			if slices.Contains(declaredHeaders, rule) {
				headers = append(headers, rule)
			}
		}
		slices.Sort(headers)
		declared[r.Method+" "+r.Pattern] = headers
		anonymous[r.Method+" "+r.Pattern] = slices.Contains(r.Rules, string(endpoints.Anonymous))
		// Every change and delete of a resource is its owner's (or an
		// admin's) alone: others are refused (OwnerOnly) or, for what is
		// private to its maker, not told it exists (Private).
		if (r.Method == "PATCH" || r.Method == "DELETE") && !declaresOwnership(r) {
			t.Errorf("route %s %s declares neither endpoints.OwnerOnly nor endpoints.Private", r.Method, r.Pattern)
		}
	}
	if len(routes) == 0 {
		t.Fatal("the service registers no public route")
	}
	documented := operations(t, spec)
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is registered but not in the OpenAPI document", r)
		}
	}
	// The headers a route declares it takes (transport.go) are the ones
	// its operation documents: a write that checks If-Match, a create
	// that replays an Idempotency-Key.
	for _, op := range documentOperations(t, spec) {
		key := op.Method + " " + op.Path
		takes, ok := declared[key]
		if !ok {
			continue
		}
		if !slices.Equal(takes, op.Takes) {
			t.Errorf("route %s declares it takes %v, its operation documents %v", key, takes, op.Takes)
		}
		// A route that answers without a token says so in its document
		// (`security: []`), and only such a route does.
		if anonymous[key] != op.Anonymous {
			t.Errorf("route %s: declared anonymous %v, documented without security %v", key, anonymous[key], op.Anonymous)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("operation %s is in the OpenAPI document but not registered", d)
		}
		if strings.HasPrefix(strings.Fields(d)[1], auth.InternalPrefix) {
			t.Errorf("operation %s: internal paths must not be documented for integrations", d)
		}
	}
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations lists "METHOD /path" for every operation of the bundled document.
func operations(t *testing.T, spec servicekit.Spec) []string {
	t.Helper()
	var ops []string
	for _, op := range documentOperations(t, spec) {
		ops = append(ops, op.Method+" "+op.Path)
	}
	slices.Sort(ops)
	return ops
}

// operation is one documented operation, as the error rows need it.
type operation struct {
	Method, Path string
	Body         string // "json", "multipart" or ""
	List         bool   // takes limit and cursor
	Query        map[string]string
	Scope        string
	Admin        bool     // its security asks registry:admin besides Scope (an operator's setting)
	Anonymous    bool     // its security is empty: it answers without a token
	Takes        []string // the request headers of declaredHeaders it documents, sorted
}

// declaredHeaders are the request headers a route declares it takes.
var declaredHeaders = []string{string(endpoints.IfMatch), string(endpoints.IdempotencyKey)}

func documentOperations(t testing.TB, spec servicekit.Spec) []operation {
	t.Helper()
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters    map[string]parameter   `json:"parameters"`
			RequestBodies map[string]requestBody `json:"requestBodies"`
		} `json:"components"`
	}
	if err := json.Unmarshal(Document(t, spec), &doc); err != nil {
		t.Fatal(err)
	}
	var ops []operation
	for path, item := range doc.Paths {
		var shared []parameter
		if raw, ok := item["parameters"]; ok {
			_ = json.Unmarshal(raw, &shared)
		}
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			var op struct {
				Parameters  []parameter            `json:"parameters"`
				RequestBody requestBody            `json:"requestBody"`
				Security    *[]map[string][]string `json:"security"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			o := operation{Method: strings.ToUpper(method), Path: path, Query: map[string]string{}}
			for _, p := range append(shared, op.Parameters...) {
				p = p.resolve(doc.Components.Parameters)
				if p.In == "header" && slices.Contains(declaredHeaders, p.Name) {
					o.Takes = append(o.Takes, p.Name)
				}
				if p.In != "query" {
					continue
				}
				if p.Name == "limit" {
					o.List = true
				}
				if p.Required {
					o.Query[p.Name] = p.exampleValue()
				}
			}
			body := op.RequestBody.resolve(doc.Components.RequestBodies)
			switch {
			case body.Content["application/json"] != nil:
				o.Body = "json"
			case body.Content["multipart/form-data"] != nil:
				o.Body = "multipart"
			}
			o.Scope = auth.ScopeRead
			var security []map[string][]string
			if op.Security != nil {
				security = *op.Security
				o.Anonymous = len(security) == 0
			}
			for _, s := range security {
				for _, scopes := range s {
					if slices.Contains(scopes, auth.ScopeWrite) {
						o.Scope = auth.ScopeWrite
					}
					o.Admin = o.Admin || slices.Contains(scopes, auth.ScopeAdmin)
				}
			}
			slices.Sort(o.Takes)
			if o.Takes == nil {
				o.Takes = []string{}
			}
			ops = append(ops, o)
		}
	}
	slices.SortFunc(ops, func(a, b operation) int { return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method) })
	return ops
}

type parameter struct {
	Ref      string `json:"$ref"`
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
	Example  any    `json:"example"`
}

func (p parameter) resolve(components map[string]parameter) parameter {
	if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
		return components[name]
	}
	return p
}

func (p parameter) exampleValue() string {
	if s, ok := p.Example.(string); ok {
		return s
	}
	return ""
}

type requestBody struct {
	Ref     string                     `json:"$ref"`
	Content map[string]json.RawMessage `json:"content"`
}

func (b requestBody) resolve(components map[string]requestBody) requestBody {
	if name, ok := strings.CutPrefix(b.Ref, "#/components/requestBodies/"); ok {
		return components[name]
	}
	return b
}
