package crossservice

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/services/actions"
	"github.com/assetregistry/registry/services/assets"
	"github.com/assetregistry/registry/services/documents"
	"github.com/assetregistry/registry/services/parties"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// registry is the four services together, with what an action names.
type registry struct {
	actions, assets, parties, documents *servicetest.Service
	asset, person, organization         string
}

func newRegistry(t *testing.T) registry {
	t.Helper()
	c := servicetest.StartCluster(t, actions.Spec(), assets.Spec(), parties.Spec(), documents.Spec())
	r := registry{actions: c["actions"], assets: c["assets"], parties: c["parties"], documents: c["documents"]}
	a, p := r.assets, r.parties
	typ := a.Call(201, "POST", "/asset_types", a.RW, map[string]any{"brand": "Liftmaster", "model": "LM-200"}).JSON()["id"]
	r.asset = a.Call(201, "POST", "/assets", a.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": typ}).JSON()["id"].(string)
	r.person = p.Call(201, "POST", "/people", p.RW, map[string]any{"first_name": "Ingrid", "last_name": "Kontrollør"}).JSON()["id"].(string)
	r.organization = p.Call(201, "POST", "/organizations", p.RW, map[string]any{"name": "Kontroll AS",
		"registration_number": "987654321", "organization_type": "private"}).JSON()["id"].(string)
	return r
}

func (r registry) action(t *testing.T) map[string]any {
	t.Helper()
	return r.actions.Call(201, "POST", "/actions", r.actions.RW, map[string]any{"asset_id": r.asset, "action_type": "expert_control",
		"performed_at": "2025-03-14", "person_id": r.person, "organization_id": r.organization}).JSON()
}

// An action's references are checked with the real owners, and the owners
// refuse to delete what an action or an action document points at, naming
// it; a document lists the action documents linking it.
func TestActionsWithRealPeers(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	x := r.actions
	// Each target is checked as its own kind: an asset's id is no person.
	bad := x.Call(422, "POST", "/actions", x.RW, map[string]any{"asset_id": r.person, "action_type": "repair", "performed_at": "2025-01-01",
		"person_id": r.organization, "organization_id": r.asset})
	if got := strings.Join(bad.Fields(), ","); got != "asset_id,person_id,organization_id" {
		t.Errorf("fields = %s", got)
	}
	action := r.action(t)
	id := action["id"].(string)
	report := upload(t, r.documents, "report.pdf", "application/pdf", "%PDF-1.7 report")["id"].(string)
	ad := x.Call(201, "POST", "/actions/"+id+"/action_documents", x.RW, map[string]any{"action_id": id, "document_id": report,
		"source_system": "app", "source_reference": "r-1"}).JSON()
	x.Call(422, "POST", "/actions/"+id+"/action_documents", x.RW, map[string]any{"action_id": id, "document_id": r.person,
		"source_system": "app", "source_reference": "r-2"})

	doc := r.documents.Call(200, "GET", "/documents/"+report, r.documents.RO, nil).JSON()
	linked := doc["action_documents"].([]any)
	if len(linked) != 1 {
		t.Fatalf("action_documents of the document: %v", linked)
	}
	for _, field := range []string{"id", "action_id", "document_id", "source_system", "source_reference", "created_at"} {
		if linked[0].(map[string]any)[field] != ad[field] {
			t.Errorf("the document shows %s = %v, the action document is %v", field, linked[0].(map[string]any)[field], ad[field])
		}
	}

	for _, refused := range []struct {
		owner *servicetest.Service
		path  string
		names string
	}{
		{r.assets, "/assets/" + r.asset, id},
		{r.parties, "/people/" + r.person, id},
		{r.parties, "/organizations/" + r.organization, id},
		{r.documents, "/documents/" + report, ad["id"].(string)},
	} {
		p := refused.owner.Call(409, "DELETE", refused.path, refused.owner.RW, nil).JSON()
		if p["type"] != httpx.ProblemTypePrefix+"still-referenced" || !strings.Contains(p["detail"].(string), refused.names) {
			t.Errorf("DELETE %s: %v", refused.path, p)
		}
	}
	// The action goes with its action document; then everything it named can go.
	x.Call(204, "DELETE", "/actions/"+id, x.RW, nil)
	if doc := r.documents.Call(200, "GET", "/documents/"+report, r.documents.RO, nil).JSON(); len(doc["action_documents"].([]any)) != 0 {
		t.Errorf("after the action's delete: %v", doc["action_documents"])
	}
	r.documents.Call(204, "DELETE", "/documents/"+report, r.documents.RW, nil)
	r.assets.Call(204, "DELETE", "/assets/"+r.asset, r.assets.RW, nil)
	r.parties.Call(204, "DELETE", "/people/"+r.person, r.parties.RW, nil)
	r.parties.Call(204, "DELETE", "/organizations/"+r.organization, r.parties.RW, nil)
	x.Call(422, "POST", "/actions", x.RW, map[string]any{"asset_id": r.asset, "action_type": "repair", "performed_at": "2025-01-01"})
}

// A create that fails after its targets were checked (here the insert,
// refused by a trigger) leaves nothing behind at the owners: deleting the
// asset, the person and the organization it checked goes through.
func TestFailedCreateLeavesNoMark(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	pool := r.actions.Built.Store.Pool
	if _, err := pool.Exec(t.Context(), `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON actions FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	r.actions.Call(500, "POST", "/actions", r.actions.RW, map[string]any{"asset_id": r.asset, "action_type": "repair",
		"performed_at": "2025-01-01", "person_id": r.person, "organization_id": r.organization})
	r.assets.Call(204, "DELETE", "/assets/"+r.asset, r.assets.RW, nil)
	r.parties.Call(204, "DELETE", "/people/"+r.person, r.parties.RW, nil)
	r.parties.Call(204, "DELETE", "/organizations/"+r.organization, r.parties.RW, nil)
}

// Deletes of an asset racing creates of actions on it, many rounds,
// through the real services: each round either refuses the delete (and
// the actions that made it stay, naming an asset that exists) or deletes
// the asset (and no action names it).
func TestDeleteVersusActionRace(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	a, x := r.assets, r.actions
	typ := a.Call(201, "POST", "/asset_types", a.RW, map[string]any{"brand": "Race", "model": "R"}).JSON()["id"]
	const rounds, creators = 30, 4
	deleted, refused := 0, 0
	for round := range rounds {
		asset := a.Call(201, "POST", "/assets", a.RW, map[string]any{"serial_number": "SN-" + string(rune('A'+round)), "asset_type_id": typ}).JSON()["id"].(string)
		var wg sync.WaitGroup
		start := make(chan struct{})
		var deleteStatus int
		wg.Go(func() { <-start; deleteStatus = a.Do("DELETE", "/assets/"+asset, a.RW, nil).Status })
		for range creators {
			wg.Go(func() {
				<-start
				resp := x.Do("POST", "/actions", x.RW, map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01"})
				if resp.Status != 201 && resp.Status != 422 {
					t.Errorf("create: %d %s", resp.Status, resp.Raw)
				}
			})
		}
		close(start)
		wg.Wait()
		naming := x.Call(200, "GET", "/actions?asset_id="+asset, x.RO, nil).List()
		assetStatus := a.Do("GET", "/assets/"+asset, a.RO, nil).Status
		switch {
		case deleteStatus == 204 && len(naming) == 0 && assetStatus == 404:
			deleted++
		case deleteStatus == 409 && len(naming) > 0 && assetStatus == 200:
			refused++
		default:
			t.Fatalf("round %d: delete %d, %d actions name the asset, GET asset %d", round, deleteStatus, len(naming), assetStatus)
		}
	}
	t.Logf("%d rounds: %d deletes went through, %d were refused", rounds, deleted, refused)
}

// Sixteen writers of actions against a delete of their asset, through the
// real services, many rounds; in half of them the actions service
// remembers the asset from an earlier action (so it asks nobody). No
// action ever names a deleted asset: every 201's asset still exists.
func TestDeleteVersusSixteenActionWriters(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	a, x := r.assets, r.actions
	typ := a.Call(201, "POST", "/asset_types", a.RW, map[string]any{"brand": "Race", "model": "R16"}).JSON()["id"]
	const rounds, writers = 16, 16
	deleted, refused := 0, 0
	var mu sync.Mutex
	var created []string // assets of the 201 actions
	for round := range rounds {
		asset := a.Call(201, "POST", "/assets", a.RW, map[string]any{"serial_number": fmt.Sprintf("SN16-%d", round), "asset_type_id": typ}).JSON()["id"].(string)
		if round%2 == 0 {
			earlier := x.Call(201, "POST", "/actions", x.RW, map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01"}).JSON()["id"].(string)
			x.Call(204, "DELETE", "/actions/"+earlier, x.RW, nil)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		var deleteStatus int
		wg.Go(func() { <-start; deleteStatus = a.Do("DELETE", "/assets/"+asset, a.RW, nil).Status })
		for i := range writers {
			wg.Go(func() {
				<-start
				time.Sleep(time.Duration(i) * 300 * time.Microsecond)
				resp := x.Do("POST", "/actions", x.RW, map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01",
					"person_id": r.person, "organization_id": r.organization})
				switch resp.Status {
				case 201:
					mu.Lock()
					created = append(created, asset)
					mu.Unlock()
				case 422:
				default:
					t.Errorf("create: %d %s", resp.Status, resp.Raw)
				}
			})
		}
		close(start)
		wg.Wait()
		switch deleteStatus {
		case 204:
			deleted++
		case 409:
			refused++
		default:
			t.Fatalf("round %d: delete %d", round, deleteStatus)
		}
	}
	for _, asset := range created {
		if status := a.Do("GET", "/assets/"+asset, a.RO, nil).Status; status != 200 {
			t.Fatalf("an action was created on asset %s, which is gone (%d)", asset, status)
		}
	}
	t.Logf("%d rounds: %d deletes went through, %d were refused; %d actions created", rounds, deleted, refused, len(created))
}
