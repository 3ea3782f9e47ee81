package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Leaf formats. An event that holds a person's personal fields (a
// person's events; an organization's that list people) carries a member
// "commitments": for each such field, by its JSON pointer, {"salt"} (the
// value is there) or {"c"} (the value was erased, its commitment stays).
// Its leaf is not the hash of the bytes served but of its logged form: the
// event without "redacted", each committed field replaced by {"c":
// SHA-256(0x04 || salt || the value's JSON)}, "commitments" by the sorted
// list of the pointers, written as Go's encoding/json writes a map
// (members sorted, no spaces). Any other event (and every event logged
// before the registry committed personal fields) is logged as served.

// personalPointers match the pointers a committed event of a kind may
// name: no other field can be erased.
var personalPointers = map[string]*regexp.Regexp{
	"person":       regexp.MustCompile(`^/(data/(first_name|last_name|date_of_birth)|changes/(first_name|last_name|date_of_birth)/[01])$`),
	"organization": regexp.MustCompile(`^/(data/associated_people|changes/associated_people/[01])/(0|[1-9][0-9]*)/(first_name|last_name|date_of_birth)$`),
}

// FieldOpening is a committed field's opening as an event carries it:
// the salt (16 random bytes) while the value is kept, the commitment C
// alone once the value was erased.
type FieldOpening struct {
	Salt []byte `json:"salt,omitempty"`
	C    []byte `json:"c,omitempty"`
}

// LoggedEvent is the logged form of an event's bytes as served: the bytes
// whose leaf hash (LeafHash) the log holds. An event without commitments
// is logged as served. Openings that do not open (a salt shorter than 128
// bits, a field that is no personal one or is missing, an erased field
// that still has a value) are an error wrapping ErrUnverified.
func LoggedEvent(event []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if !bytes.Contains(event, []byte(`"commitments":`)) || json.Unmarshal(event, &top) != nil || !bytes.HasPrefix(top["commitments"], []byte("{")) {
		return event, nil
	}
	d := json.NewDecoder(bytes.NewReader(event))
	d.UseNumber()
	var ev map[string]any
	if err := d.Decode(&ev); err != nil {
		return nil, unverified("an event's bytes: %v", err)
	}
	var openings map[string]FieldOpening
	if err := json.Unmarshal(top["commitments"], &openings); err != nil {
		return nil, unverified("an event's commitments: %v", err)
	}
	kind, _ := ev["subject"].(map[string]any)["kind"].(string)
	delete(ev, "redacted")
	names := make([]string, 0, len(openings))
	for pointer, o := range openings {
		if re := personalPointers[kind]; re == nil || !re.MatchString(pointer) {
			return nil, unverified("%s is not a personal field of a %q event", pointer, kind)
		}
		holder, last, ok := pointerParent(ev, pointer)
		if !ok {
			return nil, unverified("the event has no %s", pointer)
		}
		value := holder.get(last)
		var c []byte
		switch {
		case len(o.C) == 0 && len(o.Salt) >= 16:
			text, _ := json.Marshal(value)
			sum := sha256.Sum256(append(append([]byte{0x04}, o.Salt...), text...))
			c = sum[:]
		case len(o.Salt) == 0 && len(o.C) == sha256.Size && value == nil:
			c = o.C
		default:
			return nil, unverified("the opening of %s opens nothing (a salt of at least 16 bytes, or the commitment of an erased value)", pointer)
		}
		holder.set(last, map[string]any{"c": c})
		names = append(names, pointer)
	}
	sort.Strings(names)
	ev["commitments"] = names
	return json.Marshal(ev)
}

// EventLeafHash is the leaf hash of an event's bytes as the registry
// serves them (the feed, histories, passports), of either leaf format.
func EventLeafHash(event []byte) ([]byte, error) {
	logged, err := LoggedEvent(event)
	if err != nil {
		return nil, err
	}
	return LeafHash(logged), nil
}

// container is an object or an array of a decoded event.
type container struct {
	obj  map[string]any
	list []any
}

func (c container) get(key string) any {
	if c.obj != nil {
		return c.obj[key]
	}
	i, _ := strconv.Atoi(key)
	return c.list[i]
}

func (c container) set(key string, v any) {
	if c.obj != nil {
		c.obj[key] = v
		return
	}
	i, _ := strconv.Atoi(key)
	c.list[i] = v
}

// pointerParent finds the container holding the field at pointer, and the
// field's key in it.
func pointerParent(ev map[string]any, pointer string) (container, string, bool) {
	tokens := strings.Split(pointer, "/")[1:]
	at := container{obj: ev}
	for i, token := range tokens {
		last := i == len(tokens)-1
		var next any
		if at.obj != nil {
			v, ok := at.obj[token]
			if !ok {
				return container{}, "", false
			}
			next = v
		} else {
			n, err := strconv.Atoi(token)
			if err != nil || n < 0 || n >= len(at.list) {
				return container{}, "", false
			}
			next = at.list[n]
		}
		if last {
			return at, token, true
		}
		switch v := next.(type) {
		case map[string]any:
			at = container{obj: v}
		case []any:
			at = container{list: v}
		default:
			return container{}, "", false
		}
	}
	return container{}, "", false
}
