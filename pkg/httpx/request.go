package httpx

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/assetregistry/registry/pkg/apperr"
)

// CheckRequest refuses, before anything routes or proxies it, a request
// whose target or header the registry cannot read completely: header
// fields over limits.MaxHeaderBytes (431), a path that is not UTF-8 or
// holds U+0000 once percent-decoded, and a query that ParseRawQuery
// refuses (400). Every process runs it, so the gateway refuses such a
// request itself instead of passing it on, and a service refuses it even
// when it is called directly.
func CheckRequest(limits ReadLimits) func(http.Handler) http.Handler {
	limits = limits.withDefaults()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := checkRequest(r, limits); err != nil {
				WriteProblem(r.Context(), err, w)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func checkRequest(r *http.Request, limits ReadLimits) error {
	if size := headerSize(r); size > limits.MaxHeaderBytes {
		return apperr.New(apperr.KindHeaderTooLarge, fmt.Sprintf(
			"the request line and header fields take %d bytes; at most %d are accepted", size, limits.MaxHeaderBytes))
	}
	if p := r.URL.Path; !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
		return apperr.BadRequest("the path is not UTF-8 or holds the character U+0000 once percent-decoded")
	}
	if r.URL.RawQuery != "" {
		if _, err := ParseRawQuery(r.URL.RawQuery); err != nil {
			return err
		}
	}
	return nil
}

// headerSize is about what net/http counts against Server.MaxHeaderBytes:
// the request line and every header field line as sent.
func headerSize(r *http.Request) int {
	size := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	size += len("Host: ") + len(r.Host) + 2
	for name, values := range r.Header {
		for _, v := range values {
			size += len(name) + 2 + len(v) + 2
		}
	}
	return size
}
