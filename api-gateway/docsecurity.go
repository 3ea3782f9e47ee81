package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"regexp"
)

// The documentation pages and documents are served without a token, to
// anyone who can reach the gateway, so they say what a browser may do with
// them: load scripts, styles and images from the registry alone (and the
// page's own inline scripts, by hash), connect only to the registry, never
// be framed, and never sniff a content type other than the declared one.

// documentPolicy is the Content-Security-Policy of /openapi* (JSON, no
// page): nothing may load.
const documentPolicy = "default-src 'none'; frame-ancestors 'none'"

// indexPolicy is that of /docs, a page without scripts.
const indexPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pagePolicy is that of a Swagger UI page whose inline scripts have the
// given hashes. Swagger UI sets style attributes as it renders and its
// stylesheet draws icons from data: URLs, so styles may be inline and
// images data:; nothing comes from another host.
func pagePolicy(scriptHashes []string) string {
	scripts := "'self'"
	for _, h := range scriptHashes {
		scripts += " '" + h + "'"
	}
	return "default-src 'none'; script-src " + scripts + "; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
		"font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// secured sets the security headers of a documentation answer.
func secured(policy string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

var inlineScript = regexp.MustCompile(`(?s)<script>(.*?)</script>`)

// inlineScriptHashes renders page once and returns the CSP hashes of its
// inline scripts, so the policy allows exactly those and no other inline
// script (an injected one included).
func inlineScriptHashes(page http.Handler, path string) []string {
	w := &recorder{header: http.Header{}}
	r, _ := http.NewRequest(http.MethodGet, path, nil)
	page.ServeHTTP(w, r)
	var hashes []string
	for _, m := range inlineScript.FindAllSubmatch(w.body.Bytes(), -1) {
		sum := sha256.Sum256(m[1])
		hashes = append(hashes, "sha256-"+base64.StdEncoding.EncodeToString(sum[:]))
	}
	return hashes
}

// recorder keeps what a handler writes (the binary links no httptest).
type recorder struct {
	header http.Header
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(int)             {}
