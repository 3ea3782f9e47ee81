package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Query reads query parameters with the contract's error rules: a value
// that does not parse as its type (limit=abc, a bad UUID, a foreign cursor)
// is a 400; a well-formed value outside its domain (an enum, a date that
// does not exist, a required parameter left out) is a 422. Unknown
// parameters are a 400 so that a typo in a filter name does not silently
// return everything.
type Query struct {
	values     url.Values
	known      []string
	parseErr   error
	bad        apperr.Validation
	invalid    apperr.Validation
	repeats    []string // the parameters read as lists (Enums), which may repeat
	repeatable []string // the parameters ParseQueryRepeating lets repeat
}

// ParseQuery starts reading r's query; known lists every parameter the
// operation accepts. A query that does not parse completely (see
// ParseRawQuery) reads as empty and its Err is the parse error, so no
// filter is ever silently dropped.
func ParseQuery(r *http.Request, known ...string) *Query {
	return ParseQueryRepeating(r, nil, known...)
}

// ParseQueryRepeating is ParseQuery for an operation some of whose
// parameters may be given more than once (type=a&type=b), read with
// Strings; repeatable names are among known too.
func ParseQueryRepeating(r *http.Request, repeatable []string, known ...string) *Query {
	values, err := ParseRawQuery(r.URL.RawQuery)
	q := &Query{values: values, known: known, repeatable: repeatable, parseErr: err}
	keys := make([]string, 0, len(q.values))
	for k := range q.values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case !slices.Contains(known, k):
			q.bad.Add(k, "is not a known query parameter; known: %s", strings.Join(known, ", "))
		case len(q.values[k]) > 1 && !slices.Contains(repeatable, k):
			q.bad.Add(k, onceMessage)
		}
	}
	return q
}

func (q *Query) raw(name string) (string, bool) {
	if !slices.Contains(q.known, name) {
		panic("httpx.Query: " + name + " was not declared as known")
	}
	v, ok := q.values[name]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// String returns the parameter, or nil when absent.
func (q *Query) String(name string) *string {
	v, ok := q.raw(name)
	if !ok {
		return nil
	}
	return &v
}

// Strings returns every value of a repeatable parameter, in order (nil
// when absent).
func (q *Query) Strings(name string) []string {
	if !slices.Contains(q.repeatable, name) {
		panic("httpx.Query: " + name + " was not declared as repeatable")
	}
	return q.values[name]
}

// Bool reads "true" or "false".
func (q *Query) Bool(name string) *bool {
	return parsed(q, name, ParseBool, func(error) { q.bad.Add(name, "must be true or false") })
}

// UUID reads an identifier.
func (q *Query) UUID(name string) *uuid.UUID {
	return parsed(q, name, ParseUUID, func(error) { q.bad.Add(name, uuidMessage) })
}

// Date reads a YYYY-MM-DD date.
func (q *Query) Date(name string) *model.Date {
	return parsed(q, name, model.ParseDate, func(err error) { q.invalid.Add(name, "%s", err.Error()) })
}

// parsed reads the parameter name with parse: nil when absent, and nil
// when parse refuses it, which refuse then records (a 400 or a 422, as
// the type's rules say).
func parsed[T any](q *Query, name string, parse func(string) (T, error), refuse func(error)) *T {
	v, ok := q.raw(name)
	if !ok {
		return nil
	}
	x, err := parse(v)
	if err != nil {
		refuse(err)
		return nil
	}
	return &x
}

// Enum reads a value that must be one of allowed.
func (q *Query) Enum(name string, allowed []string) *string {
	v, ok := q.raw(name)
	if !ok {
		return nil
	}
	if !slices.Contains(allowed, v) {
		q.invalid.Add(name, "must be one of %s", strings.Join(allowed, ", "))
		return nil
	}
	return &v
}

// Enums reads a parameter that may repeat (action_type=a&action_type=b),
// each value one of allowed; nil when absent. Every value out of allowed
// is named in the 422.
func (q *Query) Enums(name string, allowed []string) []string {
	q.raw(name) // declared as known
	q.repeats = append(q.repeats, name)
	var out []string
	for _, v := range q.values[name] {
		if !slices.Contains(allowed, v) {
			q.invalid.Add(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
			continue
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// onceMessage is the problem of a parameter given twice that only takes
// one value.
const onceMessage = "must be given at most once"

// Invalid records a domain problem found by the caller (e.g. a pattern).
func (q *Query) Invalid(name, format string, args ...any) { q.invalid.Add(name, format, args...) }

// Bad records a value the caller could not parse (a cursor of its own
// making, say): a 400.
func (q *Query) Bad(name, format string, args ...any) { q.bad.Add(name, format, args...) }

// Limit reads limit alone, for lists whose cursor is not Page's.
func (q *Query) Limit() int {
	limit := model.DefaultLimit
	if v, ok := q.raw("limit"); ok {
		n, err := strconv.Atoi(v)
		// Digits only: "+5" and " 5" are not what a client meant to send.
		if err != nil || !allDigits(v) || n < 1 || n > model.MaxLimit {
			q.bad.Add("limit", "must be an integer from 1 to %d", model.MaxLimit)
		} else {
			limit = n
		}
	}
	return limit
}

// Page reads limit and cursor. The cursor is bound to the other parameters,
// so it must be called with "limit" and "cursor" among the known ones.
func (q *Query) Page() model.Page {
	page := model.Page{Limit: q.Limit()}
	if v, ok := q.raw("cursor"); ok {
		after, sub, err := model.DecodeCursor(v, q.Binding())
		if err != nil {
			q.bad.Add("cursor", "%s", err.Error())
		} else {
			page.After, page.AfterSub = after, sub
		}
	}
	return page
}

// LinkPage reads limit and cursor of a list of links (model.LinkPage),
// the cursor bound to the other parameters and to scope, the resource
// whose links are listed, so that it is not valid for another's.
func (q *Query) LinkPage(scope string) model.LinkPage {
	page := model.LinkPage{Limit: q.Limit()}
	if v, ok := q.raw("cursor"); ok {
		after, err := model.DecodeLinkCursor(v, scope+"\x00"+q.Binding())
		if err != nil {
			q.bad.Add("cursor", "%s", err.Error())
		} else {
			page.After = &after
		}
	}
	return page
}

// Binding is the canonical form of every parameter but limit and cursor; a
// cursor is only valid with the filters it was issued for.
func (q *Query) Binding() string { return cursorBinding(q.values) }

func cursorBinding(values url.Values) string {
	filters := url.Values{}
	for k, v := range values {
		if k != "limit" && k != "cursor" {
			filters[k] = v
		}
	}
	return filters.Encode()
}

// Err returns the collected problems: 400 if the query or any value failed
// to parse, else 422 if any was out of its domain, else nil.
func (q *Query) Err() error {
	if q.parseErr != nil {
		return q.parseErr
	}
	var bad []apperr.FieldError
	for _, f := range q.bad.Fields() {
		if f.Message != onceMessage || !slices.Contains(q.repeats, f.Field) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return apperr.BadRequest("the query has parameters that cannot be parsed", bad...)
	}
	if fields := q.invalid.Fields(); len(fields) > 0 {
		return apperr.Invalid(fields...)
	}
	return nil
}

// ParseBool accepts exactly "true" and "false": strconv.ParseBool's "1",
// "t" and "T" would make the create flag of finds ambiguous.
func ParseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}

// ParseUUID accepts only the canonical form, 36 characters in lowercase,
// the form the registry writes, so one resource has one URL (uuid.Parse
// would also take upper case, braces and urn:uuid: prefixes).
func ParseUUID(s string) (uuid.UUID, error) {
	if !canonicalUUID(s) {
		return uuid.Nil, fmt.Errorf("%q is not a UUID in canonical lowercase form", s)
	}
	return uuid.Parse(s)
}

func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// uuidMessage says what a UUID parameter must look like.
const uuidMessage = "must be a UUID in canonical lowercase form (0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f)"

// PathUUID reads a UUID path parameter; a malformed one is a 400.
func PathUUID(r *http.Request, name string) (uuid.UUID, error) {
	v := r.PathValue(name)
	id, err := ParseUUID(v)
	if err != nil {
		return uuid.Nil, apperr.BadRequest(fmt.Sprintf("%s in the path must be a UUID", name),
			apperr.FieldError{Field: name, Message: uuidMessage})
	}
	return id, nil
}

// PathUUIDs reads the UUID path parameters names, in their order; the
// first malformed one is the 400.
func PathUUIDs(r *http.Request, names ...string) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, len(names))
	for i, name := range names {
		id, err := PathUUID(r, name)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// MaxQueryParams bounds the parameters of one query. No operation takes
// more than a handful; the bound keeps a query of thousands from costing
// a problem body (and a parse) of thousands of entries.
const MaxQueryParams = 100

// ParseRawQuery parses a query string completely or not at all. Go's
// url.Values parsing drops what it cannot parse (a bad percent escape, a
// ';', everything past 10,000 parameters) and returns the rest, so a
// filter that fails to parse would silently widen a list; here any such
// problem is a 400 naming the parameter. Names and values must be UTF-8
// without U+0000 (the database refuses it).
func ParseRawQuery(raw string) (url.Values, error) {
	values := url.Values{}
	if raw == "" {
		return values, nil
	}
	var bad apperr.Validation
	n := 0
	for segment := range strings.SplitSeq(raw, "&") {
		if segment == "" {
			continue // "a=1&&b=2": an empty pair carries nothing
		}
		if n++; n > MaxQueryParams {
			return url.Values{}, apperr.BadRequest(fmt.Sprintf("the query has more than %d parameters", MaxQueryParams))
		}
		rawKey, rawValue, _ := strings.Cut(segment, "=")
		key, err := url.QueryUnescape(rawKey)
		switch {
		case err != nil:
			bad.Add(rawKey, "is not a well-formed parameter name: %s", escapeProblem(err))
			continue
		case key == "":
			bad.Add("="+rawValue, "is a value without a parameter name")
			continue
		}
		if strings.Contains(segment, ";") {
			bad.Add(key, "contains ';', which does not separate parameters here (use '&', or %%3B for a literal ';')")
			continue
		}
		value, err := url.QueryUnescape(rawValue)
		switch {
		case err != nil:
			bad.Add(key, "has a value that is not percent-encoded correctly: %s", escapeProblem(err))
		case !utf8.ValidString(key) || !utf8.ValidString(value):
			bad.Add(key, "is not UTF-8 once percent-decoded")
		case strings.ContainsRune(key, 0) || strings.ContainsRune(value, 0):
			bad.Add(key, "contains the character U+0000, which no value may hold")
		default:
			values[key] = append(values[key], value)
		}
	}
	if fields := bad.Fields(); len(fields) > 0 {
		return url.Values{}, apperr.BadRequest("the query cannot be parsed", fields...)
	}
	return values, nil
}

// escapeProblem names a percent-escape error without Go's package prefix.
func escapeProblem(err error) string {
	var esc url.EscapeError
	if errors.As(err, &esc) {
		return fmt.Sprintf("%%%s is not a percent escape", strings.TrimPrefix(string(esc), "%"))
	}
	return err.Error()
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
