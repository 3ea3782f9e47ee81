package servicetest

import (
	"testing"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// OwnerCase is one change or delete of something the read-write client
// created: the owner rule refuses it to a second integration (403
// not-owner, nothing changed) and lets an admin through.
type OwnerCase struct {
	Name         string
	Method, Path string
	Body         any
	// Read is the path whose representation must not change when the
	// call is refused (the row itself, or its parent).
	Read string
	// AdminStatus is the answer an admin gets (0: the call is not made
	// as admin, because it would remove what a later case needs).
	AdminStatus int
}

// Ownership runs the cases in order: each as the second integration
// (refused, nothing changed), then, where AdminStatus is set, as an admin.
func (a *Service) Ownership(t *testing.T, cases []OwnerCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			before := testkit.Expect(t, a.Client.Do(t, "GET", c.Read, a.RO, nil), 200).Raw
			refused := testkit.Expect(t, a.Client.Do(t, c.Method, c.Path, a.Other, c.Body), 403).JSON()
			if refused["type"] != httpx.ProblemTypePrefix+"not-owner" || refused["owner"] != "rw-client" {
				t.Errorf("refused as: %v", refused)
			}
			if after := testkit.Expect(t, a.Client.Do(t, "GET", c.Read, a.RO, nil), 200).Raw; string(after) != string(before) {
				t.Errorf("%s changed after a refused %s:\n%s\n%s", c.Read, c.Method, before, after)
			}
			if c.AdminStatus != 0 {
				testkit.Expect(t, a.Client.Do(t, c.Method, c.Path, a.Admin, c.Body), c.AdminStatus)
			}
		})
	}
}
