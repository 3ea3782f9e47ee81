package clientgen

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/openapi"
	"github.com/assetregistry/registry/pkg/outbox"
)

// boundedByAChangeInProgress are the schema locations whose arrays are
// being bounded by a change in progress elsewhere. Each is a location as
// the test reports it; delete it once its change is in.
var boundedByAChangeInProgress = []string{}

// configuredByTheOperator are arrays no request can lengthen: they hold
// what the operator configured, and grow only with that configuration.
var configuredByTheOperator = map[string]string{
	"events GET /log/keys 200 application/json.keys": "the log's verifier keys: the signing key's and those of transparency.previous-keys",
}

// eventData names, for every kind of change event, the operation whose
// success answer is the event's data (an event carries the resource as
// its GET answers it): the walk below then holds the events to the same
// bound as the answers. A kind missing here fails the test, so a new kind
// cannot escape it.
var eventData = map[string]string{
	outbox.KindOrganization:       "parties GET /organizations/{id} 200",
	outbox.KindPerson:             "parties GET /people/{id} 200",
	outbox.KindPersonOrganization: "parties POST /people/{person_id}/organizations/{organization_id} 201",
	outbox.KindAssetType:          "assets GET /asset_types/{id} 200",
	outbox.KindAsset:              "assets GET /assets/{id} 200",
	outbox.KindAction:             "actions GET /actions/{id} 200",
	outbox.KindActionDocument:     "actions POST /actions/{action_id}/action_documents 201",
	outbox.KindDocument:           "documents GET /documents/{id} 200",
	outbox.KindInspectionPlan:     "actions GET /inspection_plans/{id} 200",
	outbox.KindCompliance:         "actions GET /compliance 200",
	outbox.KindAssetComponent:     "assets GET /assets/{id} 200", // the component, its subject the parent
	outbox.KindMeterReading:       "assets GET /assets/{id}/meter_readings/{reading_id} 200",
	outbox.KindActionType:         "actions POST /action_types 201",
	outbox.KindAssetGrant:         "assets POST /assets/{id}/grants 201",
	outbox.KindTransfer:           "assets GET /transfers/{id} 200",
}

// No answer and no event can grow without bound: every array in a
// success answer's schema (and so in every event, whose data is an
// answer) has maxItems, but the body of a paged list (an operation that
// takes limit and cursor), which the page bounds, and a streamed answer
// (x-streamed), which no request holds whole.
func TestEveryAnswerAndEventIsBounded(t *testing.T) {
	answers := map[string]bool{} // "service METHOD path status" of every success answer
	var unbounded []string
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		doc, err := openapi.Bundle(specs[name]().OpenAPIYAML)
		if err != nil {
			t.Fatal(err)
		}
		w := walker{doc: doc}
		paths := asMap(doc["paths"])
		for _, path := range slices.Sorted(maps.Keys(paths)) {
			item := asMap(paths[path])
			for _, method := range slices.Sorted(maps.Keys(item)) {
				op := asMap(item[method])
				if op == nil || method == "parameters" {
					continue
				}
				paged := takesPage(doc, item, op)
				// A streamed answer (x-streamed: the passport) is written
				// as it is read, in bounded memory, and charged against
				// the rate limit by its size: no request holds it whole.
				streamed := op["x-streamed"] == true
				for status, r := range asMap(op["responses"]) {
					if !strings.HasPrefix(status, "2") {
						continue
					}
					where := fmt.Sprintf("%s %s %s %s", name, strings.ToUpper(method), path, status)
					answers[where] = true
					if streamed {
						continue
					}
					for media, c := range asMap(w.resolve(asMap(r))["content"]) {
						schema := asMap(asMap(c)["schema"])
						w.walk(where+" "+media, schema, paged, map[string]bool{})
					}
				}
			}
		}
		unbounded = append(unbounded, w.unbounded...)
	}
	for _, kind := range outbox.Kinds {
		if op, ok := eventData[kind]; !ok || !answers[op] {
			t.Errorf("events of kind %s: no answer of the documents is named as their data (%q)", kind, op)
		}
	}
	for _, where := range unbounded {
		if _, ok := configuredByTheOperator[where]; !ok && !slices.Contains(boundedByAChangeInProgress, where) {
			t.Errorf("unbounded array (no maxItems): %s", where)
		}
	}
	for _, where := range boundedByAChangeInProgress {
		if !slices.Contains(unbounded, where) {
			t.Errorf("%s is bounded now: take it off boundedByAChangeInProgress", where)
		}
	}
}

// takesPage says whether an operation is a paged list: it takes limit and
// cursor (its own parameters or its path's).
func takesPage(doc openapi.Document, item, op map[string]any) bool {
	names := map[string]bool{}
	for _, list := range []any{item["parameters"], op["parameters"]} {
		params, _ := list.([]any)
		for _, p := range params {
			names[asMap(resolveRef(doc, asMap(p)))["name"].(string)] = true
		}
	}
	return names["limit"] && names["cursor"]
}

type walker struct {
	doc       openapi.Document
	unbounded []string
}

func (w *walker) resolve(v map[string]any) map[string]any { return resolveRef(w.doc, v) }

// walk records every array under schema without maxItems; top is whether
// schema is the body of a paged list, whose own array the page bounds.
// seen holds the components on the way down, so a recursive schema ends.
func (w *walker) walk(where string, schema map[string]any, top bool, seen map[string]bool) {
	if ref, ok := schema["$ref"].(string); ok {
		if seen[ref] {
			return
		}
		seen = maps.Clone(seen)
		seen[ref] = true
		schema = w.resolve(schema)
	}
	if schema == nil {
		return
	}
	if isArray(schema) && schema["maxItems"] == nil && !top {
		w.unbounded = append(w.unbounded, where)
	}
	if items := asMap(schema["items"]); items != nil {
		w.walk(where+"[]", items, false, seen)
	}
	for _, name := range slices.Sorted(maps.Keys(asMap(schema["properties"]))) {
		w.walk(where+"."+name, asMap(asMap(schema["properties"])[name]), false, seen)
	}
	if extra := asMap(schema["additionalProperties"]); extra != nil {
		w.walk(where+".*", extra, false, seen)
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		parts, _ := schema[key].([]any)
		for _, part := range parts {
			// allOf and its kin describe the same value: a paged list's
			// body may be spelled through them too.
			w.walk(where, asMap(part), top && key != "prefixItems", seen)
		}
	}
}

func isArray(schema map[string]any) bool {
	switch t := schema["type"].(type) {
	case string:
		return t == "array"
	case []any:
		return slices.Contains(t, any("array"))
	}
	return schema["items"] != nil
}

// resolveRef follows a local reference ("#/components/...") to what it
// names, through references to references.
func resolveRef(doc openapi.Document, v map[string]any) map[string]any {
	for range 10 {
		ref, ok := v["$ref"].(string)
		if !ok {
			return v
		}
		var node any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			node = asMap(node)[part]
		}
		v = asMap(node)
	}
	return v
}
