package parties

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// Every committed write records exactly one event per change, its data
// the resource as GET answers it; replays, finds and repeats record none.
func TestEventsOfEveryWrite(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	org := a.Call(201, "POST", "/organizations", a.RW, acme, "Idempotency-Key", "org-1").JSON()
	orgID := org["id"].(string)
	a.WantEvents(t, "rw-client", servicetest.Event{Type: "organization.created", ID: orgID, Data: a.GET("/organizations/" + orgID)})

	a.Call(201, "POST", "/organizations", a.RW, acme, "Idempotency-Key", "org-1") // a replay
	a.Call(200, "POST", "/organizations/find", a.RO, map[string]any{"registration_number": "912345678", "country": "no"})
	a.Call(200, "PATCH", "/organizations/"+orgID, a.RW, `{"name":"Acme AS"}`) // no change
	a.WantEvents(t, "rw-client")

	a.Call(200, "PATCH", "/organizations/"+orgID, a.RW, `{"name":"Acme Holding AS"}`)
	a.WantEvents(t, "rw-client", servicetest.Event{Type: "organization.updated", ID: orgID,
		Data: a.GET("/organizations/" + orgID), Changes: []string{"name", "updated_at"}})

	person := a.Call(201, "POST", "/people", a.RW, map[string]any{"first_name": "Kari", "last_name": "Nordmann"}).JSON()
	personID := person["id"].(string)
	a.WantEvents(t, "rw-client", servicetest.Event{Type: "person.created", ID: personID, Data: a.GET("/people/" + personID)})
	a.Call(200, "POST", "/people/find", a.RW, map[string]any{"first_name": "kari", "last_name": "nordmann"})
	a.WantEvents(t, "rw-client")

	linkPath := "/people/" + personID + "/organizations/" + orgID + "?relation_type=employee"
	link := a.Call(201, "POST", linkPath, a.RW, nil)
	linkID := personID + ":" + orgID + ":employee"
	a.WantEvents(t, "rw-client", servicetest.Event{Type: "person_organization.created", ID: linkID, Data: link.Raw})
	a.Call(200, "POST", linkPath, a.RW, nil) // the same link again
	a.WantEvents(t, "rw-client")
	a.Call(204, "DELETE", linkPath, a.RW, nil)
	a.WantEvents(t, "rw-client", servicetest.Event{Type: "person_organization.deleted", ID: linkID, Data: link.Raw})

	// A delete takes its links along, each with its event, before its own.
	link = a.Call(201, "POST", linkPath, a.RW, nil)
	a.Events(t)
	gone := a.GET("/people/" + personID)
	a.Call(204, "DELETE", "/people/"+personID, a.RW, nil)
	a.WantEvents(t, "rw-client",
		servicetest.Event{Type: "person_organization.deleted", ID: linkID, Data: link.Raw},
		servicetest.Event{Type: "person.deleted", ID: personID, Data: gone})
	gone = a.GET("/organizations/" + orgID)
	a.Call(204, "DELETE", "/organizations/"+orgID, a.RW, nil)
	a.WantEvents(t, "rw-client", servicetest.Event{Type: "organization.deleted", ID: orgID, Data: gone})

	// A write that fails records nothing.
	a.Call(404, "DELETE", "/organizations/"+orgID, a.RW, nil)
	a.WantEvents(t, "rw-client")
}

// NATS that cannot be reached stops the events, never the writes: the
// service stays ready, says why its relay cannot publish, and records.
func TestNATSDownLeavesTheServiceReady(t *testing.T) {
	t.Parallel()
	issuer := testkit.NewIssuer(t, servicetest.Audience)
	cfg := servicetest.Config(t, Spec(), issuer)
	cfg.Events.URL = "nats://127.0.0.1:" + strconv.Itoa(testkit.FreePort(t)) // nothing listens
	a := servicetest.StartWith(t, Spec(), cfg, issuer)
	id := a.Call(201, "POST", "/organizations", a.RW, acme).JSON()["id"].(string)
	a.WantEvents(t, "rw-client", servicetest.Event{Type: "organization.created", ID: id, Data: a.GET("/organizations/" + id)})

	probe := testkit.Client{BaseURL: a.Client.BaseURL}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ready := testkit.Expect(t, probe.Do(t, "GET", "/readyz", "", nil), 200).JSON()
		checks, _ := ready["checks"].(map[string]any)
		reasons, _ := ready["reasons"].(map[string]any)
		reason, _ := reasons["relay"].(string)
		if ready["status"] == "ready" && checks["relay"] == "unavailable" && strings.Contains(reason, "nats") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz = %v, want ready with checks.relay unavailable because of NATS", ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
