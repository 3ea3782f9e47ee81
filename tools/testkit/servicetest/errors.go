package servicetest

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit"
)

// ErrorRows sends every documented operation of spec the requests that
// the contract answers the same way everywhere, and checks each answer is
// the right problem: 401 without or with a bad token, 403 without the
// operation's scope, 400 for a malformed or upper-case UUID in the path,
// for an unknown query parameter and for a query that does not parse
// completely, 431 for header fields over their limit, 404 for an id that
// names nothing, 415/400/413/422 for JSON bodies of the wrong type, not
// JSON, naming a member twice, too large, with an unknown or read-only
// member (at most 50 listed), the limit and cursor rules of lists, and 405
// with Allow for a method a path does not have. Afterwards every list answers
// exactly as before: none of the rows changed anything.
func ErrorRows(t *testing.T, s *Service, spec servicekit.Spec) {
	t.Helper()
	ops := documentOperations(t, spec)
	noScope := s.Issuer.Token(t, "no-scope-client")
	before := lists(t, s, ops)
	for _, op := range ops {
		token := s.RO
		if op.Scope == auth.ScopeWrite {
			token = s.RW
		}
		if op.Admin {
			token = s.Admin
		}
		path := fill(op.Path, nil)
		query := op.encodedQuery()
		name := op.Method + " " + op.Path
		t.Run(name, func(t *testing.T) {
			row := func(rowName string, status int, method, target, tok string, body any, headers ...string) testkit.Response {
				t.Helper()
				var r testkit.Response
				t.Run(rowName, func(t *testing.T) {
					r = testkit.Expect(t, s.Client.Do(t, method, target, tok, body, headers...), status)
				})
				return r
			}
			validBody := any(nil)
			if op.Body == "json" {
				validBody = "{}"
			}
			if op.Anonymous {
				// It answers without a token; what it answers is its own
				// test's (a 404 before the first checkpoint, say), but
				// never a refusal for want of one.
				t.Run("no token", func(t *testing.T) {
					if r := s.Client.Do(t, op.Method, path+query, "", validBody); r.Status == 401 || r.Status == 403 {
						t.Errorf("an operation documented without security answered %d without a token", r.Status)
					}
				})
			} else {
				r := row("no token", 401, op.Method, path+query, "", validBody)
				if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("401 without a Bearer challenge: %q", r.Header.Get("WWW-Authenticate"))
				}
				row("garbage token", 401, op.Method, path+query, "not-a-jwt", validBody)
				lacking := noScope
				if op.Scope == auth.ScopeWrite {
					lacking = s.RO
				}
				row("token without "+op.Scope, 403, op.Method, path+query, lacking, validBody)
			}
			if op.Admin {
				row("token without "+auth.ScopeAdmin, 403, op.Method, path+query, s.RW, validBody)
			}
			row("unknown query parameter", 400, op.Method, path+withParam(query, "zz_unknown=1"), token, validBody)
			// Pairs Go's own query parsing drops, leaving the rest to
			// answer as if they had not been sent.
			row("a query pair with a bad escape", 400, op.Method, path+withParam(query, "%zz=1"), token, validBody)
			row("a query pair after a semicolon", 400, op.Method, path+withParam(query, "zz=1;zz=2"), token, validBody)
			row("header fields over 64 KiB", 431, op.Method, path+query, token, validBody, "X-Padding", strings.Repeat("p", 64<<10))
			for _, param := range pathParams(op.Path) {
				if param != "id" && !strings.HasSuffix(param, "_id") {
					continue // no id (a passport link's token): any string names something or nothing
				}
				row("malformed "+param, 400, op.Method, fill(op.Path, map[string]string{param: "not-a-uuid"})+query, token, validBody)
				row("upper-case "+param, 400, op.Method, fill(op.Path, map[string]string{param: strings.ToUpper(uuid.Must(uuid.NewV7()).String())})+query, token, validBody)
			}
			if last := pathParams(op.Path); len(last) > 0 && strings.HasSuffix(op.Path, "{"+last[len(last)-1]+"}") &&
				slices.Contains([]string{"GET", "PATCH", "DELETE"}, op.Method) {
				row("unknown id", 404, op.Method, path+query, token, validBody)
			}
			switch op.Body {
			case "json":
				row("not JSON media type", 415, op.Method, path+query, token, "{}", "Content-Type", "text/plain")
				row("not JSON", 400, op.Method, path+query, token, `{"a":`)
				row("over 1 MiB", 413, op.Method, path+query, token, `{"a":"`+strings.Repeat("x", httpx.MaxJSONBody)+`"}`)
				r := row("unknown member", 422, op.Method, path+query, token, `{"zz_unknown_member":1}`)
				if !slices.Contains(r.Fields(), "zz_unknown_member") {
					t.Errorf("unknown member: fields = %v", r.Fields())
				}
				r = row("read-only member", 422, op.Method, path+query, token, `{"created_by":"me"}`)
				if !slices.Contains(r.Fields(), "created_by") {
					t.Errorf("read-only member: fields = %v", r.Fields())
				}
				row("a member twice", 400, op.Method, path+query, token, `{"zz_unknown_member":1,"zz_unknown_member":2}`)
				r = row("a thousand unknown members", 422, op.Method, path+query, token, unknownMembers(1000))
				if len(r.Fields()) != httpx.MaxFieldErrors || r.JSON()["errors_omitted"] != float64(1000-httpx.MaxFieldErrors) {
					t.Errorf("a thousand unknown members: %d fields listed, errors_omitted %v", len(r.Fields()), r.JSON()["errors_omitted"])
				}
			case "multipart":
				row("JSON instead of multipart", 415, op.Method, path+query, token, "{}")
			}
			if op.List {
				for _, q := range []string{"limit=abc", "limit=0", "limit=1001", "limit=+5", "cursor=not-a-cursor"} {
					row(q, 400, op.Method, path+withParam(query, q), token, nil)
				}
			}
		})
	}
	for _, path := range paths(ops) {
		allowed := methodsOf(ops, path)
		if slices.Contains(allowed, "GET") {
			allowed = append(allowed, "HEAD")
		}
		slices.Sort(allowed)
		for _, m := range []string{"PUT", "PATCH", "DELETE", "POST", "GET"} {
			if slices.Contains(allowed, m) {
				continue
			}
			t.Run(m+" "+path, func(t *testing.T) {
				r := testkit.Expect(t, s.Client.Do(t, m, fill(path, nil), s.RW, nil), 405)
				if got, want := r.Header.Get("Allow"), strings.Join(allowed, ", "); got != want {
					t.Errorf("Allow = %q, want %q", got, want)
				}
			})
			break
		}
	}
	if after := lists(t, s, ops); !slices.Equal(before, after) {
		t.Errorf("the error rows changed what the lists answer:\nbefore %v\nafter  %v", before, after)
	}
}

// unknownMembers is a JSON object of n members no operation knows.
func unknownMembers(n int) string {
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf(`"zz_unknown_%d":1`, i)
	}
	return "{" + strings.Join(members, ",") + "}"
}

// lists reads every list operation with only its required parameters.
func lists(t *testing.T, s *Service, ops []operation) []string {
	t.Helper()
	var out []string
	for _, op := range ops {
		if op.List && op.Method == "GET" && len(pathParams(op.Path)) == 0 {
			r := testkit.Expect(t, s.Client.Do(t, "GET", op.Path+withParam(op.encodedQuery(), "limit=1000"), s.RO, nil), 200)
			out = append(out, op.Path+" "+string(r.Raw))
		}
	}
	return out
}

var paramPattern = regexp.MustCompile(`\{([^}]+)\}`)

func pathParams(path string) []string {
	var names []string
	for _, m := range paramPattern.FindAllStringSubmatch(path, -1) {
		names = append(names, m[1])
	}
	return names
}

// fill replaces each path parameter with its value in values, or a fresh
// UUIDv7 that names nothing.
func fill(path string, values map[string]string) string {
	return paramPattern.ReplaceAllStringFunc(path, func(m string) string {
		if v, ok := values[m[1:len(m)-1]]; ok {
			return url.PathEscape(v)
		}
		return uuid.Must(uuid.NewV7()).String()
	})
}

func (op operation) encodedQuery() string {
	if len(op.Query) == 0 {
		return ""
	}
	q := url.Values{}
	for k, v := range op.Query {
		q.Set(k, v)
	}
	return "?" + q.Encode()
}

func withParam(query, param string) string {
	if query == "" {
		return "?" + param
	}
	return query + "&" + param
}

func paths(ops []operation) []string {
	var out []string
	for _, op := range ops {
		if !slices.Contains(out, op.Path) {
			out = append(out, op.Path)
		}
	}
	return out
}

func methodsOf(ops []operation, path string) []string {
	var out []string
	for _, op := range ops {
		if op.Path == path {
			out = append(out, op.Method)
		}
	}
	return out
}
