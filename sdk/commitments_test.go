package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// An event with a committed personal field: its leaf is of its logged
// form, written here by hand from the documented rule, and stays the same
// once the value and its salt are erased; a guess without the salt
// confirms nothing; a change to any other field changes the leaf; openings
// that open nothing are refused; an event without commitments is logged as
// served.
func TestEventLeafHashOfCommittedFields(t *testing.T) {
	salt := bytes.Repeat([]byte{7}, 16)
	c := sha256.Sum256(append(append([]byte{4}, salt...), `"Kari"`...))
	b64 := base64.StdEncoding.EncodeToString
	const tail = `"id":"e1","subject":{"id":"p1","kind":"person"},"type":"person.created"}`
	served := `{"actor":"a","commitments":{"/data/first_name":{"salt":"` + b64(salt) + `"}},"data":{"first_name":"Kari","id":"p1"},` + tail
	logged := `{"actor":"a","commitments":["/data/first_name"],"data":{"first_name":{"c":"` + b64(c[:]) + `"},"id":"p1"},` + tail
	erased := `{"actor":"a","commitments":{"/data/first_name":{"c":"` + b64(c[:]) + `"}},"data":{"first_name":null,"id":"p1"},` +
		`"redacted":{"fields":["first_name"],"at":"2026-01-02T03:04:05Z","entry":9},` + tail
	want := LeafHash([]byte(logged))
	for name, event := range map[string]string{"served": served, "erased": erased, "logged": logged} {
		got, err := EventLeafHash([]byte(event))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: leaf %x (%v), want the logged form's %x", name, got, err, want)
		}
	}
	for _, guess := range [][]byte{[]byte(`{"actor":"a","data":{"first_name":"Kari","id":"p1"},` + tail), []byte(strings.Replace(erased, "null", `"Kari"`, 1))} {
		if got, _ := EventLeafHash(guess); bytes.Equal(got, want) {
			t.Errorf("a guess without the salt derives the leaf: %s", guess)
		}
	}
	for name, event := range map[string]string{
		"another actor":           strings.Replace(erased, `"actor":"a"`, `"actor":"b"`, 1),
		"the commitment left out": strings.Replace(strings.Replace(erased, `"/data/first_name":{"c":"`+b64(c[:])+`"}`, ``, 1), "null", `"Kari"`, 1),
	} {
		if got, err := EventLeafHash([]byte(event)); err == nil && bytes.Equal(got, want) {
			t.Errorf("%s: still the leaf", name)
		}
	}
	for name, event := range map[string]string{
		"a field that is no personal one": strings.Replace(served, `"/data/first_name"`, `"/actor"`, 1),
		"a short salt":                    strings.Replace(served, b64(salt), b64(salt[:8]), 1),
		"a value beside its commitment":   strings.Replace(erased, "null", `"Kari"`, 1),
		"a field the event lacks":         strings.Replace(served, `"/data/first_name"`, `"/data/last_name"`, 1),
	} {
		if _, err := EventLeafHash([]byte(event)); !errors.Is(err, ErrUnverified) {
			t.Errorf("%s: %v", name, err)
		}
	}
	old := []byte(`{"actor":"a","data":{"first_name":"Kari"},"id":"e0","subject":{"id":"p0","kind":"person"},"type":"person.created"}`)
	if got, err := EventLeafHash(old); err != nil || !bytes.Equal(got, LeafHash(old)) {
		t.Errorf("an event without commitments: %x, %v", got, err)
	}
}
