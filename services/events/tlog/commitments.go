package tlog

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/assetregistry/registry/pkg/outbox"
)

// Personal fields as salted commitments (leaf format 2). An event that
// holds a person's personal fields (a person's events; an organization's
// that list people in associated_people) is stored with a random salt for
// each of those fields, in its member "commitments" ({pointer: {"salt"}}),
// and its leaf is not the hash of the bytes served but of its logged form:
// the event with each such field replaced by its commitment {"c":
// SHA-256(0x04 || salt || the value's JSON)} and "commitments" by the
// sorted list of the fields' pointers. An erasure nulls the values and
// replaces each salt by the commitment it made ({"c"}): the logged form,
// and so the leaf, stays the same, and without the salt nothing confirms
// a guessed value. An event without the member is of format 1: its leaf
// is the hash of its bytes as served, as before.

// commitmentsMember is the served member holding the openings, and the
// logged member listing the committed pointers.
const commitmentsMember = "commitments"

// commitPrefix separates a commitment from the log's other hashes (0x00
// leaves, 0x01 nodes, 0x02 buckets, 0x03 chains).
const commitPrefix = 0x04

// saltSize is a commitment's salt, 128 random bits.
const saltSize = 16

// opening is a committed field's opening as served: its salt while the
// value is kept, the commitment alone once erased.
type opening struct {
	Salt []byte `json:"salt,omitempty"`
	C    []byte `json:"c,omitempty"`
}

// personalPointer matches the pointers (RFC 6901) of personal fields: a
// person's own in data and changes, and those of a listed person in an
// organization's associated_people.
var personalPointer = map[string]*regexp.Regexp{
	outbox.KindPerson:       regexp.MustCompile(`^/(data/(first_name|last_name|date_of_birth)|changes/(first_name|last_name|date_of_birth)/[01])$`),
	outbox.KindOrganization: regexp.MustCompile(`^/(data/associated_people|changes/associated_people/[01])/(0|[1-9][0-9]*)/(first_name|last_name|date_of_birth)$`),
}

// CommitPersonal is an event (raw, as published, of kind) as the feed
// stores and serves it, and its logged form, whose leaf hash the log
// holds: for an event with personal fields, each given a fresh salt. Any
// other event, and one it cannot read (never stopping the feed for it), is
// served and logged as published.
func CommitPersonal(kind string, raw []byte) (served, logged []byte) {
	if personalPointer[kind] == nil {
		return raw, raw
	}
	ev, err := decodeEvent(raw)
	if _, ok := ev[commitmentsMember]; err != nil || ok {
		return raw, raw
	}
	pointers := personalPointers(kind, ev)
	if len(pointers) == 0 {
		return raw, raw
	}
	openings := make(map[string]opening, len(pointers))
	for _, p := range pointers {
		salt := make([]byte, saltSize)
		_, _ = rand.Read(salt) // never fails (crypto/rand)
		openings[p] = opening{Salt: salt}
	}
	ev[commitmentsMember] = openings
	served, err = json.Marshal(ev)
	if err == nil {
		logged, _, err = Logged(served)
	}
	if err != nil {
		return raw, raw
	}
	return served, logged
}

// personalPointers are the pointers of the personal fields ev holds.
func personalPointers(kind string, ev map[string]any) []string {
	var out []string
	fields := func(prefix string, obj any) {
		if m, ok := obj.(map[string]any); ok {
			for _, f := range PersonalFields {
				if _, ok := m[f]; ok {
					out = append(out, prefix+"/"+f)
				}
			}
		}
	}
	people := func(prefix string, list any) {
		l, _ := list.([]any)
		for i, p := range l {
			fields(prefix+"/"+strconv.Itoa(i), p)
		}
	}
	data, _ := ev["data"].(map[string]any)
	changes, _ := ev["changes"].(map[string]any)
	for _, side := range []string{"0", "1"} {
		i, _ := strconv.Atoi(side)
		switch kind {
		case outbox.KindPerson:
			for _, f := range PersonalFields {
				if pair, ok := changes[f].([]any); ok && len(pair) == 2 {
					out = append(out, "/changes/"+f+"/"+side)
				}
			}
		case outbox.KindOrganization:
			if pair, ok := changes["associated_people"].([]any); ok && len(pair) == 2 {
				people("/changes/associated_people/"+side, pair[i])
			}
		}
	}
	if kind == outbox.KindPerson {
		fields("/data", data)
	} else if data != nil {
		people("/data/associated_people", data["associated_people"])
	}
	slices.Sort(out)
	return out
}

// decodeEvent reads an event's bytes, numbers as written.
func decodeEvent(body []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var ev map[string]any
	if err := d.Decode(&ev); err != nil {
		return nil, fmt.Errorf("log: an event's bytes: %w", err)
	}
	return ev, nil
}

// decodeCommitted reads a format 2 event's bytes, and its openings.
func decodeCommitted(body []byte) (map[string]any, map[string]opening, error) {
	ev, err := decodeEvent(body)
	if err != nil {
		return nil, nil, err
	}
	var openings map[string]opening
	if raw, err := json.Marshal(ev[commitmentsMember]); err != nil || json.Unmarshal(raw, &openings) != nil {
		return nil, nil, fmt.Errorf("log: the event's %s are not openings", commitmentsMember)
	}
	return ev, openings, nil
}

// committed says whether an event's bytes are of leaf format 2: they hold
// the openings of their personal fields.
func committed(body []byte) bool {
	if !bytes.Contains(body, []byte(`"`+commitmentsMember+`":{`)) {
		return false // most events: no parse
	}
	var top map[string]json.RawMessage
	return json.Unmarshal(body, &top) == nil && bytes.HasPrefix(top[commitmentsMember], []byte("{"))
}

// Logged is the logged form of an event's bytes as served (the bytes
// whose leaf hash the log holds) and whether the event is of leaf format 2.
// A format 1 event is logged as served. It fails for a format 2 event whose
// openings are not of personal fields, or name a field it lacks, or give
// the commitment alone of a field that still holds a value.
func Logged(body []byte) ([]byte, bool, error) {
	if !committed(body) {
		return body, false, nil
	}
	ev, openings, err := decodeCommitted(body)
	if err != nil {
		return nil, true, err
	}
	kind, _ := ev["subject"].(map[string]any)["kind"].(string)
	delete(ev, "redacted")
	pointers := make([]string, 0, len(openings))
	for p, o := range openings {
		if re := personalPointer[kind]; re == nil || !re.MatchString(p) {
			return nil, true, fmt.Errorf("log: %s is no personal field of an event of kind %q", p, kind)
		}
		value, ok := lookup(ev, p)
		if !ok {
			return nil, true, fmt.Errorf("log: the event has no %s", p)
		}
		c, err := o.commitment(p, value)
		if err != nil {
			return nil, true, err
		}
		if !replace(ev, p, map[string]any{"c": c}) {
			return nil, true, fmt.Errorf("log: the event has no %s", p)
		}
		pointers = append(pointers, p)
	}
	slices.Sort(pointers)
	ev[commitmentsMember] = pointers
	out, err := json.Marshal(ev)
	return out, true, err
}

// EventLeaf is the leaf hash of an event's bytes as served, of either
// leaf format.
func EventLeaf(body []byte) ([]byte, error) {
	logged, _, err := Logged(body)
	if err != nil {
		return nil, err
	}
	return LeafHash(logged), nil
}

// commitment is the commitment a field's opening makes with its value:
// computed from the salt, or given once the value is erased.
func (o opening) commitment(pointer string, value any) ([]byte, error) {
	switch {
	case len(o.Salt) > 0 && len(o.C) == 0:
		if len(o.Salt) < saltSize {
			return nil, fmt.Errorf("log: the salt of %s is shorter than %d bytes", pointer, saltSize)
		}
		text, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		return commit(o.Salt, text), nil
	case len(o.C) == sha256.Size && len(o.Salt) == 0 && value == nil:
		return o.C, nil
	}
	return nil, fmt.Errorf("log: the opening of %s is neither a salt nor the commitment of an erased value", pointer)
}

// commit is SHA-256(0x04 || salt || value), value a field's JSON text.
func commit(salt, value []byte) []byte {
	d := sha256.New()
	d.Write([]byte{commitPrefix})
	d.Write(salt)
	d.Write(value)
	return d.Sum(nil)
}

// lookup is the value at pointer in ev.
func lookup(ev map[string]any, pointer string) (any, bool) {
	var at any = ev
	for _, token := range strings.Split(pointer, "/")[1:] {
		switch node := at.(type) {
		case map[string]any:
			v, ok := node[token]
			if !ok {
				return nil, false
			}
			at = v
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			at = node[i]
		default:
			return nil, false
		}
	}
	return at, true
}

// replace sets the value at pointer in ev, which exists.
func replace(ev map[string]any, pointer string, value any) bool {
	cut := strings.LastIndex(pointer, "/")
	parent, ok := lookup(ev, pointer[:cut])
	if !ok {
		return false
	}
	last := pointer[cut+1:]
	switch node := parent.(type) {
	case map[string]any:
		node[last] = value
		return true
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(node) {
			return false
		}
		node[i] = value
		return true
	}
	return false
}

// eraseCommitted is a format 2 event's bytes without person's personal
// values and their salts, each field's commitment kept in its opening,
// marked redacted; the pointers erased (none: nothing to erase). Its
// logged form, and so its leaf, is the one before.
func eraseCommitted(body []byte, person string, marker redactedMarker) ([]byte, []string, error) {
	ev, openings, err := decodeCommitted(body)
	if err != nil {
		return nil, nil, err
	}
	subject, _ := ev["subject"].(map[string]any)
	own := subject["kind"] == outbox.KindPerson && subject["id"] == person
	var erased []string
	for p, o := range openings {
		value, ok := lookup(ev, p)
		if !ok || len(o.Salt) == 0 {
			continue // erased before
		}
		if !own {
			holder, _ := lookup(ev, p[:strings.LastIndex(p, "/")])
			if m, _ := holder.(map[string]any); m == nil || m["id"] != person {
				continue
			}
		}
		c, err := o.commitment(p, value)
		if err != nil {
			return nil, nil, err
		}
		openings[p] = opening{C: c}
		replace(ev, p, nil)
		erased = append(erased, p)
	}
	if len(erased) == 0 {
		return body, nil, nil
	}
	slices.Sort(erased)
	ev[commitmentsMember] = openings
	marker.Fields = slices.Clone(PersonalFields)
	ev["redacted"] = marker
	out, err := json.Marshal(ev)
	return out, erased, err
}

// erasedFields says whether a format 2 event's bytes hold a field erased
// (its commitment alone): the audit requires a redaction entry for it.
func erasedFields(body []byte) bool {
	var top struct {
		Openings map[string]opening `json:"commitments"`
	}
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	for _, o := range top.Openings {
		if len(o.C) > 0 {
			return true
		}
	}
	return false
}
