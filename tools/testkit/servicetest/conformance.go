package servicetest

import (
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

// Conformance is what every service's tests check the same way: its
// bundled OpenAPI document is a valid OpenAPI 3.1 document whose references
// resolve and lists exactly the routes the router has; on a running
// service, the probes and the document answer without a token, every
// internal route refuses a token without the internal scope, and every
// operation answers the contract's common errors (ErrorRows).
//
// owned makes, on the running service, what its ownership cases call and
// returns them (Ownership): every route that declares endpoints.OwnerOnly
// or endpoints.Private needs one, so a service whose routes declare
// neither passes nil.
func Conformance(t *testing.T, spec servicekit.Spec, owned func(t *testing.T, s *Service) []OwnerCase) {
	t.Run("document", func(t *testing.T) {
		testkit.NewValidator(t, Document(t, spec))
		RoutesMatchDocument(t, spec)
	})
	s := Start(t, spec)
	t.Run("public paths", func(t *testing.T) { publicPaths(t, s, spec) })
	t.Run("error rows", func(t *testing.T) { ErrorRows(t, s, spec) })
	t.Run("ownership", func(t *testing.T) {
		var cases []OwnerCase
		if owned != nil {
			cases = owned(t, s)
		}
		s.Ownership(t, cases)
	})
}

func publicPaths(t *testing.T, s *Service, spec servicekit.Spec) {
	plain := testkit.Client{BaseURL: s.Client.BaseURL} // probes are not part of the API document
	testkit.Expect(t, plain.Do(t, "GET", "/healthz", "", nil), 200)
	if ready := testkit.Expect(t, plain.Do(t, "GET", "/readyz", "", nil), 200).JSON(); ready["status"] != "ready" {
		t.Errorf("readyz = %v", ready)
	}
	if doc := testkit.Expect(t, plain.Do(t, "GET", "/openapi.json", "", nil), 200).JSON(); doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v", doc["openapi"])
	}
	handlers, err := spec.Build(servicekit.Deps{Store: store.New(nil, nil), Logger: log.NewNopLogger(), RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range handlers.Routes.Routes() {
		if strings.HasPrefix(r.Pattern, auth.InternalPrefix) {
			// The reference protocol's routes are for peers: a client's
			// token, read-write as it may be, lacks the internal scope.
			testkit.Expect(t, plain.Do(t, r.Method, r.Pattern, s.RW, "{}"), 403)
		}
	}
}
