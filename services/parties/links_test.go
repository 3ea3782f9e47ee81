package parties

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// More links than an answer embeds: the organization's and the person's
// answers hold exactly the first model.MaxEmbedded, in link order, and say
// that more exist; the sub-resources page through every one of them; an
// update's event carries the capped answer, not every link.
func TestEmbeddedLinksAreCappedAndPaged(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	const links = model.MaxEmbedded + 20
	org := a.Call(201, "POST", "/organizations", a.RW, acme).JSON()["id"].(string)
	person := a.Call(201, "POST", "/people", a.RW, map[string]any{"first_name": "Kari", "last_name": "Nordmann"}).JSON()["id"].(string)
	var people, orgs []string // in link order
	for i := range links {
		p := a.Call(201, "POST", "/people", a.RW, map[string]any{"first_name": fmt.Sprintf("P%03d", i), "last_name": "Many"}).JSON()["id"].(string)
		a.Call(201, "POST", "/people/"+p+"/organizations/"+org+"?relation_type=employee", a.RW, nil)
		people = append(people, p)
		o := a.Call(201, "POST", "/organizations", a.RW, map[string]any{
			"name": fmt.Sprintf("Org %03d", i), "registration_number": fmt.Sprintf("R%03d", i), "organization_type": "private"}).JSON()["id"].(string)
		a.Call(201, "POST", "/people/"+person+"/organizations/"+o+"?relation_type=owner", a.RW, nil)
		orgs = append(orgs, o)
	}
	// The person is linked to the organization twice, as two relations:
	// the pages tell the entries of one id apart by their relation type.
	a.Call(201, "POST", "/people/"+people[0]+"/organizations/"+org+"?relation_type=owner", a.RW, nil)
	people = append(people, people[0])

	for _, c := range []struct {
		name, resource, list, sub string
		want                      []string
	}{
		{"organization's people", "/organizations/" + org, "associated_people", "/organizations/" + org + "/people", people},
		{"person's organizations", "/people/" + person, "associated_organizations", "/people/" + person + "/organizations", orgs},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := a.Call(200, "GET", c.resource, a.RO, nil).JSON()
			embedded, _ := got[c.list].([]any)
			if len(embedded) != model.MaxEmbedded || got[c.list+"_truncated"] != true {
				t.Fatalf("%s holds %d entries, %s_truncated = %v; want %d and true",
					c.list, len(embedded), c.list, got[c.list+"_truncated"], model.MaxEmbedded)
			}
			if ids := idsOf(embedded); strings.Join(ids, ",") != strings.Join(c.want[:model.MaxEmbedded], ",") {
				t.Errorf("%s is not the first links in link order", c.list)
			}
			var paged []string
			next, pages := c.sub+"?limit=7", 0
			for next != "" {
				page := a.Call(200, "GET", next, a.RO, nil)
				paged = append(paged, idsOf(anySlice(page.List()))...)
				next = strings.TrimSuffix(strings.TrimPrefix(page.Header.Get("Link"), "<"), `>; rel="next"`)
				if pages++; pages > len(c.want) {
					t.Fatal("the pages do not end")
				}
			}
			if strings.Join(paged, ",") != strings.Join(c.want, ",") {
				t.Errorf("paging %s gave %d entries, want all %d in link order", c.sub, len(paged), len(c.want))
			}
			whole := a.Call(200, "GET", c.sub+"?limit=1000", a.RO, nil)
			if n := len(whole.List()); n != len(c.want) || whole.Header.Get("Link") != "" {
				t.Errorf("one page of 1000: %d entries, Link %q", n, whole.Header.Get("Link"))
			}
		})
	}

	// An answer with few links says there are no more.
	few := a.Call(200, "GET", "/people/"+people[1], a.RO, nil).JSON()
	if few["associated_organizations_truncated"] != false || len(few["associated_organizations"].([]any)) != 1 {
		t.Errorf("a person with one link: %v", few)
	}
	a.Call(404, "GET", "/organizations/"+person+"/people", a.RO, nil)
	a.Call(404, "GET", "/people/"+org+"/organizations", a.RO, nil)
	// A cursor is bound to the resource it was issued for.
	first := a.Call(200, "GET", "/people/"+person+"/organizations?limit=1", a.RO, nil).Header.Get("Link")
	cursor := first[strings.Index(first, "cursor=")+len("cursor=") : strings.Index(first, ">")]
	a.Call(400, "GET", "/organizations/"+org+"/people?limit=1&cursor="+cursor, a.RO, nil)

	// An update of the organization records the answer as GET gives it:
	// the first links only, however many there are.
	a.Events(t)
	a.Call(200, "PATCH", "/organizations/"+org, a.RW, `{"name":"Acme Holding AS"}`)
	events := a.Events(t)
	if len(events) != 1 || events[0].Type != "organization.updated" {
		t.Fatalf("events = %v", events)
	}
	var data map[string]any
	if err := json.Unmarshal(events[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	if n := len(data["associated_people"].([]any)); n != model.MaxEmbedded || data["associated_people_truncated"] != true {
		t.Errorf("the update's event lists %d people (truncated %v); want %d", n, data["associated_people_truncated"], model.MaxEmbedded)
	}
	if size := len(events[0].Data); size > 32<<10 {
		t.Errorf("the update's event data is %d bytes", size)
	}
}

func idsOf(entries []any) []string {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i], _ = e.(map[string]any)["id"].(string)
	}
	return ids
}

func anySlice(items []map[string]any) []any {
	out := make([]any, len(items))
	for i, item := range items {
		out[i] = item
	}
	return out
}
