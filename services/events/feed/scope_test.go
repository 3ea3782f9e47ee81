package feed

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/outbox"
)

// Each kind's events are scoped as docs/events.md, "Who sees which
// event", says.
func TestScopeOf(t *testing.T) {
	const (
		asset  = "0192f0c4-1111-7c3e-9d1f-2a3b4c5d6e7f"
		action = "0192f0c4-2222-7c3e-9d1f-2a3b4c5d6e7f"
		orgA   = "0192f0c4-3333-7c3e-9d1f-2a3b4c5d6e7f"
		orgB   = "0192f0c4-4444-7c3e-9d1f-2a3b4c5d6e7f"
	)
	for _, c := range []struct {
		typ, subject, data string
		want               string
	}{
		{"asset.created", asset, `{"owner_organization_id":"` + orgA + `"}`, "asset=" + asset + " access=" + orgA},
		{"asset.created", asset, `{"owner_organization_id":null}`, "asset=" + asset + " access="},
		{"asset.updated", asset, `{"owner_organization_id":"` + orgA + `"}`, "asset=" + asset},
		{"compliance.updated", asset, `{}`, "asset=" + asset},
		{"action.created", action, `{"asset_id":"` + asset + `"}`, "asset=" + asset},
		{"asset_grant.created", asset + ":" + orgB, `{"asset_id":"` + asset + `","organization_id":"` + orgB + `"}`, "asset=" + asset},
		{"action_document.created", "x", `{"action_id":"` + action + `"}`, "action=" + action},
		{"transfer.created", "t", `{"asset_id":"` + asset + `","from_organization_id":"` + orgA + `","to_organization_id":"` + orgB + `"}`, "parties=" + orgA + "," + orgB},
		{"document.created", "d", `{"asset_id":"` + asset + `"}`, ""},
		{"organization.created", orgA, `{}`, ""},
		{"asset_type.created", "t", `{}`, ""},
		{"action.created", action, `{"asset_id":"not-an-id"}`, ""},
	} {
		kind, _, _ := strings.Cut(c.typ, ".")
		s := ScopeOf(outbox.Event{Type: c.typ, Subject: outbox.EventSubject{Kind: kind, ID: c.subject}, Data: json.RawMessage(c.data)})
		got := ""
		add := func(f string, a ...any) {
			if got != "" {
				got += " "
			}
			got += fmt.Sprintf(f, a...)
		}
		if s.Asset != "" {
			add("asset=%s", s.Asset)
		}
		if s.Action != "" {
			add("action=%s", s.Action)
		}
		if len(s.Parties) > 0 {
			add("parties=%s,%s", s.Parties[0], s.Parties[1])
		}
		if s.Access != nil {
			add("access=%s", s.Access.OwnerOrganizationID)
		}
		if got != c.want {
			t.Errorf("%s %s: scope %q, want %q", c.typ, c.data, got, c.want)
		}
	}
}
