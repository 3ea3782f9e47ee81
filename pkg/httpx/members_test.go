package httpx

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestMembersOfSplitsAsEncodingJSONReads holds the decoder's walk over an
// object's members to encoding/json's reading of the same text: the same
// names, unescaped, each with the same value.
func TestMembersOfSplitsAsEncodingJSONReads(t *testing.T) {
	for _, text := range []string{
		`{}`,
		` { } `,
		`{"a":1}`,
		`{"meter":"operating_hours","value":12.5,"read_at":"2026-01-01T00:00:00Z","reset":false}`,
		"{\n\t\"a\" : [1, {\"b\": \"}\"}] ,\r\n \"c\":null }",
		`{"a\"b":"x\\","c\u00e9":{"d":[[],{}]},"e":"{[:,]}"}`,
		`{"a":-1.5e3,"b":true,"c":false,"d":"\ud83d\ude00"}`,
		`{"nested":{"deep":{"deeper":[{"x":"]"}]}},"after":2}`,
	} {
		members, ok := membersOf([]byte(text))
		if !ok {
			t.Errorf("%s: not an object?", text)
			continue
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		got := map[string]json.RawMessage{}
		for _, m := range members {
			got[m.name] = m.value
		}
		if !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) || len(members) != len(want) {
			t.Errorf("%s: members %q, want %q", text, got, want)
		}
	}
	for _, text := range []string{`[]`, `"{}"`, `1`, ``, `null`} {
		if _, ok := membersOf([]byte(text)); ok {
			t.Errorf("%s: read as an object", text)
		}
	}
}
