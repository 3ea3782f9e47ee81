package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/openapi"
)

// docs serves each service's OpenAPI document, per resource, and Swagger UI
// over it: the service's own answer, or while it does not answer the copy
// the gateway was built with (apidocs.go). Swagger UI's scripts, styles and images are embedded in the
// binary (swgui/v5emb): the pages load nothing from any other host, so they
// work in an air-gapped cluster.
type docs struct {
	upstreams map[string]*url.URL
	client    *http.Client

	mu     sync.Mutex
	cached map[string]cachedDoc // by service
}

type cachedDoc struct {
	doc     map[string]any
	fetched time.Time
	builtIn bool // the gateway's own copy (builtInDoc), not the service's answer
}

// docTTL keeps documents fresh across service deploys without fetching on
// every page view.
const docTTL = 30 * time.Second

func newDocs(upstreams map[string]*url.URL) *docs {
	return &docs{upstreams: upstreams, client: &http.Client{Timeout: 5 * time.Second}, cached: map[string]cachedDoc{}}
}

// Mount adds /docs, /docs/{resource}, /openapi.json and
// /openapi/{resource}.json; none needs a token.
func (d *docs) Mount(mux *http.ServeMux) {
	names := resourceNames(d.upstreams)
	mux.Handle("GET /docs", secured(indexPolicy, d.index(names)))
	mux.Handle("GET /openapi.json", secured(documentPolicy, http.HandlerFunc(d.serveMerged)))
	notFound := func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteProblem(r.Context(), apperr.New(apperr.KindNotFound, "no documentation at "+r.URL.Path), w)
	}
	mux.Handle("GET /docs/", secured(documentPolicy, http.HandlerFunc(notFound)))
	mux.Handle("GET /openapi/", secured(documentPolicy, http.HandlerFunc(notFound)))
	for _, name := range names {
		ui := v5emb.NewHandlerWithConfig(swgui.Config{
			Title:       "Asset Registry API: " + name,
			SwaggerJSON: "/openapi/" + name + ".json",
			BasePath:    "/docs/" + name + "/",
			SettingsUI:  map[string]string{"persistAuthorization": "true", "defaultModelsExpandDepth": "1"},
		})
		page := secured(pagePolicy(inlineScriptHashes(ui, "/docs/"+name)), ui)
		mux.Handle("GET /docs/"+name, page)
		mux.Handle("GET /docs/"+name+"/", page) // the page's own assets
		mux.Handle("GET /openapi/"+name+".json", secured(documentPolicy, d.serveResource(name)))
	}
}

var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Asset Registry API</title></head>
<body><h1>Asset Registry API</h1>
<p>Every call needs an OAuth 2.0 client-credentials access token: <code>Authorization: Bearer &lt;token&gt;</code>.
The whole API is described in <a href="/openapi.json">/openapi.json</a>.</p>
<ul>{{range .}}<li><a href="/docs/{{.}}">{{.}}</a> (<a href="/openapi/{{.}}.json">OpenAPI</a>)</li>{{end}}</ul>
</body></html>`))

func (d *docs) index(names []string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = indexPage.Execute(w, names)
	}
}

// serveResource serves the owning service's document reduced to the
// resource's paths.
func (d *docs) serveResource(name string) http.HandlerFunc {
	var res Resource
	for _, r := range catalog.Resources() {
		if r.Name == name {
			res = r
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		doc, err := d.fetch(r.Context(), res.Service)
		if err != nil {
			httpx.WriteProblem(r.Context(), err, w)
			return
		}
		out := maps.Clone(doc)
		paths := map[string]any{}
		for p, item := range asMap(doc["paths"]) {
			if owner, _, ok := catalog.RouteRequest("GET", strings.TrimSuffix(p, "/"), res.Query); ok && owner.Name == name {
				paths[p] = item
			}
		}
		out["paths"] = paths
		writeDoc(w, out)
	}
}

// serveMerged serves one document covering every configured service.
func (d *docs) serveMerged(w http.ResponseWriter, r *http.Request) {
	docs, err := d.fetchAll(r.Context())
	if err != nil {
		httpx.WriteProblem(r.Context(), err, w)
		return
	}
	if conflicts := openapi.Conflicts(docs); len(conflicts) > 0 {
		// A service deployed after the gateway's start check disagrees:
		// a merged document would describe one of them wrongly.
		httpx.WriteProblem(r.Context(), apperr.Wrap(apperr.KindInternal, "", fmt.Errorf("API documents disagree: %v", conflicts)), w)
		return
	}
	merged := map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "Asset Registry API", "version": "1"},
	}
	paths, components := map[string]any{}, map[string]any{}
	for _, service := range catalog.Names() {
		doc, ok := docs[service]
		if !ok {
			continue
		}
		for p, item := range asMap(doc["paths"]) {
			// A path another service owns (GET /assets/{id} that the
			// events service answers with as_of) is documented by its
			// owner, which names the parameter.
			if owner, _, ok := resourceFor(p); ok && owner.Service != service {
				continue
			}
			paths[p] = item
		}
		for section, entries := range asMap(doc["components"]) {
			if components[section] == nil {
				components[section] = map[string]any{}
			}
			maps.Copy(components[section].(map[string]any), asMap(entries))
		}
		if merged["security"] == nil {
			merged["security"] = doc["security"]
		}
	}
	merged["paths"], merged["components"] = paths, components
	writeDoc(w, merged)
}

func writeDoc(w http.ResponseWriter, doc map[string]any) {
	// Relative to the gateway, so "Try it out" calls the host the page
	// came from, whatever name the cluster gives it.
	doc["servers"] = []any{map[string]any{"url": "/"}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

// fetchAll returns the document of every configured service.
func (d *docs) fetchAll(ctx context.Context) (map[string]openapi.Document, error) {
	docs := map[string]openapi.Document{}
	for service := range d.upstreams {
		doc, err := d.fetch(ctx, service)
		if err != nil {
			return nil, err
		}
		docs[service] = doc
	}
	return docs, nil
}

// CheckDocuments fetches the API document of every configured service,
// waiting up to wait for services that do not answer yet, and fails when
// two of them define a component of the same name differently: the merged
// document at /openapi.json would then describe one of them wrongly, so
// the gateway refuses to start. Services still silent after wait are
// checked when they first answer (and /openapi.json fails then).
func (g *Gateway) CheckDocuments(ctx context.Context, wait time.Duration, logger log.Logger) error {
	deadline := time.Now().Add(wait)
	docs := map[string]openapi.Document{}
	for len(docs) < len(g.docs.upstreams) {
		for service := range g.docs.upstreams {
			if _, done := docs[service]; done {
				continue
			}
			if doc, err := g.docs.fetchLive(ctx, service); err == nil {
				docs[service] = doc
			}
		}
		if len(docs) == len(g.docs.upstreams) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if conflicts := openapi.Conflicts(docs); len(conflicts) > 0 {
		return fmt.Errorf("gateway: the services' API documents disagree: %v", conflicts)
	}
	for service := range g.docs.upstreams {
		if _, ok := docs[service]; !ok {
			level.Warn(logger).Log("msg", "API document not checked at start; the service did not answer", "service", service)
		}
	}
	return nil
}

// fetch returns service's document (fetchLive) or, while the service has
// never answered, the one the gateway was built with (builtInDoc), kept for
// docTTL as a fetched one is, so that a service that does not answer is
// not waited for on every page view.
func (d *docs) fetch(ctx context.Context, service string) (map[string]any, error) {
	d.mu.Lock()
	c, ok := d.cached[service]
	d.mu.Unlock()
	if ok && c.builtIn && time.Since(c.fetched) < docTTL {
		return c.doc, nil
	}
	doc, err := d.fetchLive(ctx, service)
	if err == nil {
		return doc, nil
	}
	builtIn, builtInErr := builtInDoc(service)
	if builtInErr != nil {
		return nil, apperr.Unavailable("the "+service+" service's API document", errors.Join(err, builtInErr))
	}
	d.mu.Lock()
	d.cached[service] = cachedDoc{doc: builtIn, fetched: time.Now(), builtIn: true}
	d.mu.Unlock()
	return builtIn, nil
}

// fetchLive returns service's own document: fetched at most docTTL ago,
// fetched now, or the last one fetched (a stale document beats none); an
// error while it has never answered. The start's check (CheckDocuments)
// compares these alone.
func (d *docs) fetchLive(ctx context.Context, service string) (map[string]any, error) {
	d.mu.Lock()
	c, ok := d.cached[service]
	d.mu.Unlock()
	ok = ok && !c.builtIn
	if ok && time.Since(c.fetched) < docTTL {
		return c.doc, nil
	}
	doc, err := d.download(ctx, service)
	if err != nil {
		if ok {
			return c.doc, nil // a stale document beats none
		}
		return nil, apperr.Unavailable("the "+service+" service's API document", err)
	}
	d.mu.Lock()
	d.cached[service] = cachedDoc{doc: doc, fetched: time.Now()}
	d.mu.Unlock()
	return doc, nil
}

func (d *docs) download(ctx context.Context, service string) (map[string]any, error) {
	u := d.upstreams[service].JoinPath("/openapi.json").String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", u, resp.StatusCode)
	}
	var doc map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode %s: %w", u, err)
	}
	return doc, nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
