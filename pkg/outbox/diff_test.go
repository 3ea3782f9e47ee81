package outbox_test

import (
	"encoding/json"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, old, new string
		want           map[string][2]string
	}{
		{"nothing changed", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, map[string][2]string{}},
		{"one field", `{"a":1,"b":"x"}`, `{"a":1,"b":"y"}`, map[string][2]string{"b": {`"x"`, `"y"`}}},
		{"to null", `{"a":1,"c":"x"}`, `{"a":1,"c":null}`, map[string][2]string{"c": {`"x"`, `null`}}},
		{"a field that appears", `{"a":1}`, `{"a":1,"d":[1]}`, map[string][2]string{"d": {`null`, `[1]`}}},
		{"a field that goes", `{"a":1,"d":[1]}`, `{"a":1}`, map[string][2]string{"d": {`[1]`, `null`}}},
		{"nested values compare whole", `{"o":{"x":1,"y":2}}`, `{"o":{"x":1,"y":3}}`, map[string][2]string{"o": {`{"x":1,"y":2}`, `{"x":1,"y":3}`}}},
		{"whitespace is no change", `{"o": {"x": 1}}`, `{"o":{"x":1}}`, map[string][2]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := outbox.Diff(json.RawMessage(tc.old), json.RawMessage(tc.new))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Diff = %s, want %v", mustJSON(t, got), tc.want)
			}
			for k, w := range tc.want {
				g, ok := got[k]
				if !ok || string(g[0]) != w[0] || string(g[1]) != w[1] {
					t.Errorf("field %s: %s, want [%s, %s]", k, mustJSON(t, g), w[0], w[1])
				}
			}
		})
	}
}

func TestChangeMustBeAnEvent(t *testing.T) {
	t.Parallel()
	r := outbox.NewRecorder(outbox.Config{Record: true})
	for _, c := range []outbox.Change{
		{Kind: "widget", ID: "1", Op: outbox.OpCreated, Data: map[string]int{}},
		{Kind: outbox.KindAsset, ID: "1", Op: "renamed", Data: map[string]int{}},
		{Kind: outbox.KindAsset, ID: "", Op: outbox.OpCreated, Data: map[string]int{}},
	} {
		// No transaction is needed to refuse it: validation comes first.
		if err := r.Record(t.Context(), nil, model.Caller{}, c); err == nil {
			t.Errorf("%+v recorded, want an error", c)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
