package servicetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// OwnerCase is one call on something the read-write client created, on a
// route that declares who may make it: on an endpoints.OwnerOnly route a
// second integration is refused (403 not-owner), on an endpoints.Private
// one it is told the thing does not exist (404); either way nothing
// changes, and an admin gets through.
type OwnerCase struct {
	Name         string
	Method, Path string
	Body         any
	// Read is the path whose representation must not change when the
	// call is refused (the row itself, or its parent), read as its owner.
	Read string
	// AdminStatus is the answer an admin gets (0: the call is not made
	// as admin, because it would remove what a later case needs).
	AdminStatus int
	// Batch: the call is a batch of one item, whose refusal is the item's
	// (the batch answers 200; its one result is the 403 or 404).
	Batch bool
}

// Ownership runs the cases in order: each as the second integration
// (refused as its route declares, nothing changed), then, where
// AdminStatus is set, as an admin. Every route that declares OwnerOnly or
// Private must be covered by a case: a declaration no test holds to is
// what let a rule nobody enforced go unnoticed.
func (a *Service) Ownership(t *testing.T, cases []OwnerCase) {
	t.Helper()
	routes := a.Built.Routes.Routes()
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			route, ok := routeOf(routes, c.Method, c.Path)
			switch {
			case !ok:
				t.Fatalf("no route answers %s %s", c.Method, c.Path)
			case !declaresOwnership(route):
				t.Fatalf("route %s %s declares neither OwnerOnly nor Private: the case tests no rule", route.Method, route.Pattern)
			}
			covered[route.Method+" "+route.Pattern] = true
			before := testkit.Expect(t, a.Client.Do(t, "GET", c.Read, a.RW, nil), 200).Raw
			private := slices.Contains(route.Rules, string(endpoints.Private))
			var refused map[string]any
			switch {
			case c.Batch:
				results := testkit.Expect(t, a.Client.Do(t, c.Method, c.Path, a.Other, c.Body), 200).List()
				if len(results) != 1 {
					t.Fatalf("a batch of one answered %d results", len(results))
				}
				refused, _ = results[0]["problem"].(map[string]any)
			case private:
				refused = testkit.Expect(t, a.Client.Do(t, c.Method, c.Path, a.Other, c.Body), 404).JSON()
			default:
				refused = testkit.Expect(t, a.Client.Do(t, c.Method, c.Path, a.Other, c.Body), 403).JSON()
			}
			if private && refused["type"] != httpx.ProblemTypePrefix+"not-found" {
				t.Errorf("not refused as a 404: %v", refused)
			}
			if !private && (refused["type"] != httpx.ProblemTypePrefix+"not-owner" || refused["owner"] != "rw-client") {
				t.Errorf("not refused as not-owner: %v", refused)
			}
			if after := testkit.Expect(t, a.Client.Do(t, "GET", c.Read, a.RW, nil), 200).Raw; string(after) != string(before) {
				t.Errorf("%s changed after a refused %s:\n%s\n%s", c.Read, c.Method, before, after)
			}
			if c.AdminStatus != 0 {
				testkit.Expect(t, a.Client.Do(t, c.Method, c.Path, a.Admin, c.Body), c.AdminStatus)
			}
		})
	}
	for _, r := range routes {
		// Only an admin reaches an AdminOnly route, and an admin may change
		// what anyone made: no second integration can be refused by its
		// owner rule, the scope check refuses it first (the conformance
		// rows check that 403).
		adminOnly := slices.Contains(r.Rules, string(endpoints.AdminOnly))
		if declaresOwnership(r) && !adminOnly && !covered[r.Method+" "+r.Pattern] {
			t.Errorf("route %s %s declares %v and no ownership case covers it", r.Method, r.Pattern, r.Rules)
		}
	}
}

func declaresOwnership(r httpx.Route) bool {
	return slices.Contains(r.Rules, string(endpoints.OwnerOnly)) || slices.Contains(r.Rules, string(endpoints.Private))
}

// routeOf is the route that answers method and path: of the patterns that
// match, the one with the fewest wildcards (net/http's most specific).
func routeOf(routes []httpx.Route, method, path string) (httpx.Route, bool) {
	path, _, _ = strings.Cut(path, "?")
	segments := strings.Split(strings.Trim(path, "/"), "/")
	var best httpx.Route
	bestWild, found := 0, false
	for _, r := range routes {
		if r.Method != method {
			continue
		}
		pattern := strings.Split(strings.Trim(r.Pattern, "/"), "/")
		if len(pattern) != len(segments) {
			continue
		}
		wild, match := 0, true
		for i, p := range pattern {
			switch {
			case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
				wild++
			case p != segments[i]:
				match = false
			}
		}
		if match && (!found || wild < bestWild) {
			best, bestWild, found = r, wild, true
		}
	}
	return best, found
}
