package model

import (
	"encoding/json"
	"testing"
)

func TestUUID(t *testing.T) {
	const canonical = "0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d"
	tests := []struct {
		json string
		ok   bool
	}{
		{`"` + canonical + `"`, true},
		{`null`, true},
		{`"{` + canonical + `}"`, false},
		{`"urn:uuid:` + canonical + `"`, false},
		{`"0190f5d27c1e7a3b9c4d5e6f7a8b9c0d"`, false},
		{`"0190F5D2-7C1E-7A3B-9C4D-5E6F7A8B9C0D"`, false}, // the registry writes lower case only
		{`"0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0z"`, false},
		{`5`, false},
		{`["x"]`, false},
	}
	for _, tt := range tests {
		var u UUID
		err := json.Unmarshal([]byte(tt.json), &u)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.json, err, tt.ok)
		}
		if err != nil && err.Error() != errNotUUID.Error() {
			t.Errorf("%s: message %q", tt.json, err)
		}
	}
	var u UUID
	if err := json.Unmarshal([]byte(`"`+canonical+`"`), &u); err != nil || u.String() != canonical {
		t.Errorf("decoded %v, %v", u, err)
	}
}
