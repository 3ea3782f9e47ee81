package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// checkJSON finds what encoding/json accepts but the registry must not,
// anywhere in a body json.Valid has accepted, free-form members (data,
// meta_data) included:
//   - a member name twice in one object: encoding/json keeps the last,
//     so two readers of one body could disagree on what it says (a 400);
//   - U+0000 in a string (PostgreSQL refuses it in text and jsonb, a 500
//     otherwise) and an escaped lone surrogate ("\ud800", which
//     encoding/json turns into U+FFFD, silently changing the value): a
//     422 naming the field;
//   - a number the registry cannot store and answer as written
//     (model.NumberStored: outside float64's range, or printed in full by
//     PostgreSQL as many more characters than were sent, as 1e131071
//     would be): a 422 naming the field.
//
// It is one pass without allocations for the usual body; a body with a
// problem is walked again to name the field.
func checkJSON(body []byte) error {
	c := jsonChecker{data: body}
	if c.value(); !c.found {
		return nil
	}
	// Walk again, keeping the way down, to name what was found.
	c = jsonChecker{data: body, track: true}
	c.value()
	if c.duplicate != nil {
		return c.duplicate
	}
	return apperr.Invalid(c.fields...)
}

type jsonChecker struct {
	data  []byte
	pos   int
	found bool // a problem, so far
	// track keeps the way down to where the walk is, to name a problem's
	// field; only a walk over a body with problems does (it allocates).
	track     bool
	path      []pathElem
	duplicate error
	fields    []apperr.FieldError
}

// pathElem is a member name (raw, as in the body) or an array index.
type pathElem struct {
	name    []byte
	escaped bool // name holds escapes
	index   int  // -1 for a member
}

func (c *jsonChecker) skipSpace() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value walks one value starting at pos (after any space).
func (c *jsonChecker) value() {
	c.skipSpace()
	if c.pos >= len(c.data) {
		return
	}
	switch c.data[c.pos] {
	case '{':
		c.object()
	case '[':
		c.array()
	case '"':
		if held := c.str(); held != "" {
			c.fail("must not hold " + held)
		}
	default: // a number, true, false or null: up to the next delimiter
		start := c.pos
		for ; c.pos < len(c.data); c.pos++ {
			if d := c.data[c.pos]; d == ',' || d == ']' || d == '}' || d == ' ' || d == '\t' || d == '\n' || d == '\r' {
				break
			}
		}
		if first := c.data[start]; first == '-' || (first >= '0' && first <= '9') {
			if _, problem := model.NumberStored(c.data[start:c.pos]); problem != "" {
				c.fail(problem)
			}
		}
	}
}

// skipValue moves past the value at pos without checking it: the decoder
// splitting an object checkJSON has already walked (membersOf).
func (c *jsonChecker) skipValue() {
	depth := 0
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case '"':
			if c.str(); depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return // the end of the object the value is in
			}
			if depth--; depth == 0 {
				c.pos++
				return
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return
			}
		}
		c.pos++
	}
}

func (c *jsonChecker) object() {
	c.pos++ // {
	// The names seen so far: a short list scanned for each new name, or,
	// once the object is large, a set.
	var small [8]pathElem
	names := small[:0]
	var many map[string]struct{}
	for c.duplicate == nil {
		c.skipSpace()
		if c.pos >= len(c.data) || c.data[c.pos] == '}' {
			break
		}
		if c.data[c.pos] == ',' {
			c.pos++
			continue
		}
		keyStart := c.pos + 1
		held := c.str()
		key := pathElem{name: c.data[keyStart : c.pos-1], index: -1}
		key.escaped = bytes.IndexByte(key.name, '\\') >= 0
		duplicate := false
		if many != nil {
			name := key.decoded()
			_, duplicate = many[name]
			many[name] = struct{}{}
		} else {
			for _, seen := range names {
				if sameName(seen, key) {
					duplicate = true
					break
				}
			}
			if names = append(names, key); len(names) > 32 {
				many = make(map[string]struct{}, 2*len(names))
				for _, n := range names {
					many[n.decoded()] = struct{}{}
				}
			}
		}
		c.push(key)
		if duplicate {
			c.found = true
			c.duplicate = apperr.BadRequest("the body names a member twice in one object, so which value is meant is ambiguous",
				apperr.FieldError{Field: c.pathString(), Message: "appears more than once in its object"})
			return
		}
		if held != "" {
			c.fail("has a name that holds " + held)
		}
		c.skipSpace()
		c.pos++ // :
		c.value()
		c.pop()
	}
	c.pos++ // }
}

func (c *jsonChecker) array() {
	c.pos++ // [
	c.push(pathElem{index: 0})
	for c.duplicate == nil {
		c.skipSpace()
		if c.pos >= len(c.data) || c.data[c.pos] == ']' {
			break
		}
		if c.data[c.pos] == ',' {
			c.pos++
			if c.track {
				c.path[len(c.path)-1].index++
			}
			continue
		}
		c.value()
	}
	c.pos++ // ]
	c.pop()
}

func (c *jsonChecker) push(e pathElem) {
	if c.track {
		c.path = append(c.path, e)
	}
}

func (c *jsonChecker) pop() {
	if c.track {
		c.path = c.path[:len(c.path)-1]
	}
}

// str walks the string at pos and returns what it holds that no string
// may, if anything. Raw control characters cannot occur: json.Valid
// refuses them.
func (c *jsonChecker) str() (held string) {
	c.pos++ // "
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case '"':
			c.pos++
			return held
		case '\\':
			if c.data[c.pos+1] != 'u' {
				c.pos += 2
				continue
			}
			unit := hex4(c.data[c.pos+2 : c.pos+6])
			c.pos += 6
			switch {
			case unit == 0:
				held = "the character U+0000"
			case unit >= 0xdc00 && unit <= 0xdfff:
				held = loneSurrogate(unit)
			case unit >= 0xd800 && unit <= 0xdbff:
				if c.pos+6 <= len(c.data) && c.data[c.pos] == '\\' && c.data[c.pos+1] == 'u' {
					if low := hex4(c.data[c.pos+2 : c.pos+6]); low >= 0xdc00 && low <= 0xdfff {
						c.pos += 6
						continue
					}
				}
				held = loneSurrogate(unit)
			}
		default:
			c.pos++
		}
	}
	return held
}

func loneSurrogate(unit uint16) string {
	return `a lone surrogate (\u` + strconv.FormatUint(uint64(unit), 16) + "), which is not a character"
}

func hex4(b []byte) uint16 {
	var v uint16
	for _, h := range b {
		v <<= 4
		switch {
		case h >= '0' && h <= '9':
			v |= uint16(h - '0')
		case h >= 'a' && h <= 'f':
			v |= uint16(h - 'a' + 10)
		case h >= 'A' && h <= 'F':
			v |= uint16(h - 'A' + 10)
		}
	}
	return v
}

func (c *jsonChecker) fail(message string) {
	c.found = true
	if !c.track {
		return
	}
	// Past what a problem lists, a placeholder is enough to count: naming
	// each of the 170,000 numbers a 1 MiB body can hold, at a depth of
	// thousands, would cost gigabytes of paths.
	if len(c.fields) >= MaxFieldErrors {
		c.fields = append(c.fields, apperr.FieldError{Message: message})
		return
	}
	c.fields = append(c.fields, apperr.FieldError{Field: c.pathString(), Message: message})
}

// sameName compares member names as JSON means them: "a" and "\u0061"
// are the same name.
func sameName(a, b pathElem) bool {
	if !a.escaped && !b.escaped {
		return bytes.Equal(a.name, b.name)
	}
	return a.decoded() == b.decoded()
}

func (e pathElem) decoded() string {
	if !e.escaped {
		return string(e.name)
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, e.name...), '"'), &s); err != nil {
		return string(e.name)
	}
	return s
}

// pathString is the decoder's field path: names joined by dots, indexes
// in brackets (external_ids[0].source_system).
func (c *jsonChecker) pathString() string {
	var b strings.Builder
	for _, e := range c.path {
		if e.index >= 0 {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.decoded())
	}
	return b.String()
}
