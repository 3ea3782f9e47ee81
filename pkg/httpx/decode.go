package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/assetregistry/registry/pkg/apperr"
)

// MaxJSONBody is the contract's limit for JSON request bodies.
const MaxJSONBody = 1 << 20

// Media types accepted for JSON bodies. PATCH also takes merge patches.
const (
	MediaJSON       = "application/json"
	MediaMergePatch = "application/merge-patch+json"
)

// ServiceSetFields are the members the service sets on every resource. A
// request that sends one gets a 422 naming it, not a silent drop, so a
// client that round-trips a resource learns what it cannot change.
var ServiceSetFields = []string{"id", "created_at", "created_by", "updated_at", "updated_by"}

// ReadOnlyFielder lets a request type name the read-only members of its
// own resource beyond ServiceSetFields (an organization's
// associated_people, an action's action_documents), so this package
// knows no resource.
type ReadOnlyFielder interface{ ReadOnlyFields() []string }

// DecodeJSON reads a JSON object body into dst strictly: wrong media type
// (415), too large (413), too slow (408, see BodyDeadlines), not a JSON
// object, not UTF-8 or a member name twice in one object at any depth
// (400), unknown or read-only members, members of the wrong JSON type and
// strings holding U+0000 or an escaped lone surrogate (422, each named
// with its path). Unlike encoding/json it matches member names exactly, so
// "Name" is an unknown field rather than a silent alias of "name", and it
// never keeps the last of two values for one name.
func DecodeJSON(r *http.Request, dst any) error {
	accept := []string{MediaJSON}
	if r.Method == http.MethodPatch {
		accept = append(accept, MediaMergePatch)
	}
	if err := checkMediaType(r, accept...); err != nil {
		return err
	}
	body, err := readLimited(r, MaxJSONBody)
	if err != nil {
		return err
	}
	return DecodeJSONBytes(body, dst)
}

// DecodeJSONBytes is DecodeJSON after the transport checks, for bodies read
// elsewhere (multipart fields, tests).
func DecodeJSONBytes(body []byte, dst any) error {
	if !utf8.Valid(body) {
		return apperr.BadRequest("the request body is not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return apperr.BadRequest("the request body must be a JSON object")
	}
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("httpx.DecodeJSON: dst must be a non-nil pointer")
	}
	if err := checkJSON(trimmed); err != nil {
		return err
	}
	return decodeChecked(trimmed, v)
}

// DecodeJSONItem is DecodeJSONBytes for an item of a body that
// DecodeJSON has read and checked whole (a batch's items): the body's
// UTF-8, its JSON and its members were checked at every depth, so only
// the strict decode into dst is left. A batch of 1,000 readings spent a
// quarter of its service's CPU checking each item again.
func DecodeJSONItem(item json.RawMessage, dst any) error {
	trimmed := bytes.TrimSpace(item)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return apperr.BadRequest("the request body must be a JSON object")
	}
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("httpx.DecodeJSONItem: dst must be a non-nil pointer")
	}
	return decodeChecked(trimmed, v)
}

// decodeChecked decodes a checked JSON object into what dst points to.
func decodeChecked(body []byte, dst reflect.Value) error {
	var d decoder
	d.value(body, dst.Elem(), "")
	if len(d.fields) > 0 {
		return apperr.Invalid(d.fields...)
	}
	return nil
}

func checkMediaType(r *http.Request, accept ...string) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && slices.Contains(accept, mt) {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	return apperr.New(apperr.KindUnsupportedMedia,
		fmt.Sprintf("Content-Type must be %s (got %q)", strings.Join(accept, " or "), ct))
}

func readLimited(r *http.Request, limit int64) ([]byte, error) {
	tooLarge := apperr.New(apperr.KindTooLarge, fmt.Sprintf("the request body is larger than %d bytes", limit))
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		if p := BodyProblem(err); p != nil {
			if p.Kind == apperr.KindTooLarge {
				return nil, tooLarge
			}
			return nil, p
		}
		return nil, apperr.Wrap(apperr.KindBadRequest, "the request body could not be read", err)
	}
	if int64(len(body)) > limit {
		return nil, tooLarge
	}
	return body, nil
}

type decoder struct{ fields []apperr.FieldError }

func (d *decoder) fail(path, format string, args ...any) {
	d.fields = append(d.fields, apperr.FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// patchMember is a merge-patch member (patch.Field): the decoder fills its
// value with the same strict rules as any other member, so a list of
// objects in a PATCH is checked member by member too.
type patchMember interface{ DecodeTarget(null bool) any }

var patchMemberType = reflect.TypeFor[patchMember]()

// value decodes raw into v, recursing into structs and slices of structs so
// that every problem is reported with its full path.
func (d *decoder) value(raw json.RawMessage, v reflect.Value, path string) {
	t := v.Type()
	isNull := string(raw) == "null"
	switch {
	case reflect.PointerTo(t).Implements(patchMemberType):
		if target := v.Addr().Interface().(patchMember).DecodeTarget(isNull); target != nil {
			d.value(raw, reflect.ValueOf(target).Elem(), path)
		}
	case reflect.PointerTo(t).Implements(unmarshalerType):
		d.leaf(raw, v, path)
	case t.Kind() == reflect.Pointer:
		if isNull {
			v.SetZero()
			return
		}
		elem := reflect.New(t.Elem())
		d.value(raw, elem.Elem(), path)
		v.Set(elem)
	case t.Kind() == reflect.Struct:
		if isNull {
			v.SetZero()
			return
		}
		d.object(raw, v, path)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if isNull {
			v.SetZero()
			return
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			d.fail(path, "must be an array")
			return
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	default:
		d.leaf(raw, v, path)
	}
}

func (d *decoder) object(raw json.RawMessage, v reflect.Value, path string) {
	members, ok := membersOf(raw)
	if !ok {
		d.fail(path, "must be an object")
		return
	}
	info := structInfoOf(v.Type())
	// Stable error order: by name. (No name is there twice: checkJSON
	// refused the body before.)
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	for _, m := range members {
		k := m.name
		p := k
		if path != "" {
			p = path + "." + k
		}
		if info.readOnly[k] {
			d.fail(p, "is read-only; the service sets it")
			continue
		}
		idx, ok := info.fields[k]
		if !ok {
			d.fail(p, "is not a known field")
			continue
		}
		d.value(m.value, v.FieldByIndex(idx), p)
	}
}

// member is one member of a JSON object: its name, unescaped, and its
// value as sent.
type member struct {
	name  string
	value json.RawMessage
}

// membersOf splits a valid JSON text into its members, in order, without
// decoding their values (a map of them cost an allocation per member and
// a second pass over each value); ok is false when the text is no object.
// It walks with jsonChecker's steps, which checkJSON has already taken
// over the same text.
func membersOf(raw []byte) (members []member, ok bool) {
	c := jsonChecker{data: raw}
	c.skipSpace()
	if c.pos >= len(raw) || raw[c.pos] != '{' {
		return nil, false
	}
	members = make([]member, 0, 8)
	for c.pos++; ; {
		c.skipSpace()
		if c.pos >= len(raw) {
			return nil, false
		}
		switch raw[c.pos] {
		case '}':
			return members, true
		case ',':
			c.pos++
			continue
		case '"':
		default:
			return nil, false
		}
		start := c.pos
		c.str()
		name := raw[start:c.pos]
		var m member
		if bytes.IndexByte(name, '\\') < 0 {
			m.name = string(name[1 : len(name)-1])
		} else if json.Unmarshal(name, &m.name) != nil {
			return nil, false
		}
		c.skipSpace()
		if c.pos >= len(raw) || raw[c.pos] != ':' {
			return nil, false
		}
		c.pos++
		c.skipSpace()
		start = c.pos
		c.skipValue()
		m.value = raw[start:c.pos]
		members = append(members, m)
	}
}

func (d *decoder) leaf(raw json.RawMessage, v reflect.Value, path string) {
	err := json.Unmarshal(raw, v.Addr().Interface())
	if err == nil {
		return
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		d.fail(path, "must be %s", jsonTypeName(typeErr.Type))
		return
	}
	d.fail(path, "%s", err.Error())
}

// jsonTypeName says which JSON type a Go type expects, for error messages.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "of another type"
	}
}

type structInfo struct {
	fields   map[string][]int
	readOnly map[string]bool
}

var structInfos sync.Map // reflect.Type -> *structInfo

func structInfoOf(t reflect.Type) *structInfo {
	if cached, ok := structInfos.Load(t); ok {
		return cached.(*structInfo)
	}
	info := &structInfo{fields: map[string][]int{}, readOnly: map[string]bool{}}
	for _, name := range ServiceSetFields {
		info.readOnly[name] = true
	}
	if ro, ok := reflect.New(t).Interface().(ReadOnlyFielder); ok {
		for _, name := range ro.ReadOnlyFields() {
			info.readOnly[name] = true
		}
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		info.fields[name] = f.Index
		delete(info.readOnly, name) // a type that declares a member may write it
	}
	structInfos.Store(t, info)
	return info
}
