package gateway

import (
	_ "embed"
	"net/http"
)

// verifyPage is /verify: a page, whole in one file, on which anyone checks
// an asset's passport in the browser (WebCrypto's Ed25519 and SHA-256),
// as the SDK's VerifyPassport does; it loads nothing from anywhere and
// asks the registry only for /log/keys and, when told to, a passport
// link of this registry.
//
//go:embed verify.html
var verifyPage []byte

// verifyPolicy lets the page run its inline script (by hash) and fetch
// from the registry alone.
var verifyPolicy = func() string {
	page := http.HandlerFunc(serveVerify)
	scripts := "'none'"
	if hashes := inlineScriptHashes(page, "/verify"); len(hashes) > 0 {
		scripts = ""
		for i, h := range hashes {
			if i > 0 {
				scripts += " "
			}
			scripts += "'" + h + "'"
		}
	}
	return "default-src 'none'; script-src " + scripts + "; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

func serveVerify(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(verifyPage)
}

// mountVerify adds /verify, which needs no token.
func mountVerify(mux *http.ServeMux) {
	mux.Handle("GET /verify", secured(verifyPolicy, http.HandlerFunc(serveVerify)))
}
