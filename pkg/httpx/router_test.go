package httpx_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

func testRouter() http.Handler {
	r := httpx.NewRouter()
	ok := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, _ = w.Write([]byte(name + ":" + req.PathValue("id")))
		})
	}
	r.Handle("GET", "/people", ok("list"))
	r.Handle("POST", "/people", ok("create"))
	r.Handle("GET", "/people/{id}", ok("get"))
	r.Handle("DELETE", "/people/{id}", ok("delete"))
	r.Handle("POST", "/people/find", ok("find"))
	return httpx.Chain(r, httpx.WithRequestInfo(false), httpx.Normalize)
}

func TestRouter(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		body         string // for 200
		allow        string // for 405
	}{
		{"GET", "/people", 200, "list:", ""},
		{"GET", "/people/", 200, "list:", ""},
		{"POST", "/people/", 200, "create:", ""},
		{"GET", "/people/42", 200, "get:42", ""},
		{"GET", "/people/42/", 200, "get:42", ""},
		{"GET", "//people//42", 200, "get:42", ""},
		{"HEAD", "/people/42", 200, "get:42", ""}, // the recorder keeps what a real server drops
		{"POST", "/people/find", 200, "find:", ""},
		{"POST", "/people/find/", 200, "find:", ""},
		{"GET", "/people/find", 405, "", "POST"},
		{"PUT", "/people/42", 405, "", "DELETE, GET, HEAD"},
		{"PATCH", "/people", 405, "", "GET, HEAD, POST"},
		{"GET", "/nowhere", 404, "", ""},
		{"GET", "/people/42/extra", 404, "", ""},
	}
	h := testRouter()
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d (%s)", w.Code, tt.status, w.Body)
			}
			if w.Code == 200 {
				if w.Body.String() != tt.body {
					t.Errorf("body = %q, want %q", w.Body, tt.body)
				}
				return
			}
			if got := w.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			p := problemOf(t, w)
			if p["instance"] != tt.path || p["request_id"] != w.Header().Get(httpx.RequestIDHeader) {
				t.Errorf("problem = %v", p)
			}
		})
	}
}

func TestRequestIDs(t *testing.T) {
	var seen string
	h := func(trust bool) http.Handler {
		return httpx.WithRequestInfo(trust)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			seen = httpx.RequestInfoFrom(r.Context()).ID
		}))
	}
	send := func(handler http.Handler, incoming string) string {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		if incoming != "" {
			r.Header.Set(httpx.RequestIDHeader, incoming)
		}
		handler.ServeHTTP(w, r)
		if got := w.Header().Get(httpx.RequestIDHeader); got != seen {
			t.Fatalf("response id %q != context id %q", got, seen)
		}
		return seen
	}
	if got := send(h(false), "client-chosen"); got == "client-chosen" {
		t.Error("the gateway must not adopt a client's request id")
	}
	if a, b := send(h(false), ""), send(h(false), ""); a == b || len(a) != 32 {
		t.Errorf("ids %q and %q: want two distinct 32-hex ids", a, b)
	}
	if got := send(h(true), "gw-id-1"); got != "gw-id-1" {
		t.Errorf("a service must adopt the gateway's id, got %q", got)
	}
	if got := send(h(true), "bad id\n"); got == "bad id\n" {
		t.Error("an id with control characters must be replaced")
	}
}

func TestQuery(t *testing.T) {
	known := []string{"limit", "cursor", "name", "born", "flag", "asset_id", "kind", "kinds"}
	tests := []struct {
		name   string
		query  string
		status int // 0 = no error
	}{
		{"defaults", "", 0},
		{"all valid", "limit=5&name=x&born=2000-01-31&flag=true&asset_id=0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f&kind=a", 0},
		{"unknown parameter", "nmae=x", 400},
		{"repeated parameter", "name=a&name=b", 400},
		{"limit not a number", "limit=abc", 400},
		{"limit zero", "limit=0", 400},
		{"limit over max", "limit=1001", 400},
		{"limit max", "limit=1000", 0},
		{"bool not true/false", "flag=1", 400},
		{"bad uuid", "asset_id=123", 400},
		{"braced uuid is not canonical", "asset_id={0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f}", 400},
		{"impossible date", "born=2023-02-30", 422},
		{"year 0000", "born=0000-01-01", 422},
		{"year 0001", "born=0001-01-01", 0},
		{"year 9999", "born=9999-12-31", 0},
		{"five-digit year", "born=10000-01-01", 422},
		{"enum miss", "kind=z", 422},
		{"garbage cursor", "cursor=garbage", 400},
		{"parse error wins over domain error", "limit=x&kind=z", 400},
		{"bad percent escape drops no filter", "name=50%&limit=1000", 400},
		{"bad escape in a name", "na%zzme=x", 400},
		{"garbage cursor escapes", "cursor=%%%%", 400},
		{"semicolon separator", "name=x;limit=5", 400},
		{"escaped semicolon is a value", "name=x%3Blimit", 0},
		{"U+0000 in a value", "name=a%00b", 400},
		{"U+0000 in a name", "na%00me=x", 400},
		{"not UTF-8 once decoded", "name=%ff", 400},
		{"empty pairs carry nothing", "name=x&&limit=5&", 0},
		{"over the parameter bound", "name=x" + strings.Repeat("&zz=1", httpx.MaxQueryParams), 400},
		{"upper-case uuid is not canonical", "asset_id=0190B0A4-2A2C-7C4E-8A42-1A2B3C4D5E6F", 400},
		{"limit with a sign", "limit=%2B5", 400},
		{"limit with a plus (a space)", "limit=+5", 400},
		{"a list parameter may repeat", "kinds=a&kinds=b&kinds=a", 0},
		{"every value of a list parameter is in its enum", "kinds=a&kinds=z", 422},
		{"a repeated single parameter beside a list one", "kinds=a&kinds=b&kind=a&kind=b", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := httpx.ParseQuery(httptest.NewRequest("GET", "/x?"+tt.query, nil), known...)
			q.String("name")
			q.Date("born")
			q.Bool("flag")
			q.UUID("asset_id")
			q.Enum("kind", []string{"a", "b"})
			q.Enums("kinds", []string{"a", "b"})
			page := q.Page()
			err := q.Err()
			if got := statusOf(err); got != tt.status {
				t.Fatalf("status = %d (%v), want %d", got, err, tt.status)
			}
			if err == nil && page.Limit == 0 {
				t.Error("limit defaulted to 0")
			}
		})
	}
}

// A query parses completely or is refused with the parameter named; none
// is ever dropped (Go's url.ParseQuery drops what it cannot parse).
func TestParseRawQuery(t *testing.T) {
	params := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf("p%d=%d", i, i)
		}
		return strings.Join(p, "&")
	}
	tests := []struct {
		name, query string
		params      int    // parsed parameters, when it parses
		field       string // the field named, when it does not
	}{
		{"empty", "", 0, ""},
		{"plus is a space", "a=b+c", 1, ""},
		{"at the bound", params(httpx.MaxQueryParams), httpx.MaxQueryParams, ""},
		{"over the bound", params(httpx.MaxQueryParams + 1), 0, "-"},
		{"far over Go's own bound", params(10_001), 0, "-"},
		{"bad escape names its parameter", "a=1&registration_number=50%&limit=1000", 0, "registration_number"},
		{"semicolon names its parameter", "a=1;b=2", 0, "a"},
		{"U+0000 names its parameter", "relation_type=%00", 0, "relation_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, err := httpx.ParseRawQuery(tt.query)
			if tt.field == "" {
				if err != nil || len(values) != tt.params {
					t.Fatalf("%d parameters, err %v; want %d", len(values), err, tt.params)
				}
				return
			}
			if statusOf(err) != 400 || len(values) != 0 {
				t.Fatalf("err = %v, values = %d; want a 400 and nothing parsed", err, len(values))
			}
			var e *apperr.Error
			errors.As(err, &e)
			if tt.field != "-" && (len(e.Fields) != 1 || e.Fields[0].Field != tt.field) {
				t.Errorf("fields = %v, want %s named", e.Fields, tt.field)
			}
		})
	}
}

func TestCursorIsBoundToFilters(t *testing.T) {
	after := uuid.Must(uuid.NewV7())
	cursor := model.EncodeCursor(after, "name=x")
	q := httpx.ParseQuery(httptest.NewRequest("GET", "/x?name=x&cursor="+cursor, nil), "name", "cursor", "limit")
	if page := q.Page(); q.Err() != nil || page.After != after {
		t.Fatalf("page = %+v, err = %v", page, q.Err())
	}
	q = httpx.ParseQuery(httptest.NewRequest("GET", "/x?name=y&cursor="+cursor, nil), "name", "cursor", "limit")
	q.Page()
	if statusOf(q.Err()) != 400 {
		t.Fatal("a cursor issued for other filters must be refused")
	}
}

func TestListLinkKeepsFiltersAndSwapsCursor(t *testing.T) {
	next := uuid.Must(uuid.NewV7())
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/people/?last_name=Smith&limit=2&cursor=old", nil)
	httpx.WithRequestInfo(false)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := httpx.EncodeResponse(r.Context(), w, httpx.List{Items: []int{1, 2}, Next: next}); err != nil {
			t.Fatal(err)
		}
	})).ServeHTTP(w, r)
	link := w.Header().Get("Link")
	want := "</people/?cursor=" + model.EncodeCursor(next, "last_name=Smith") + `&last_name=Smith&limit=2>; rel="next"`
	if link != want {
		t.Errorf("Link = %s\nwant   %s", link, want)
	}
	if strings.TrimSpace(w.Body.String()) != "[1,2]" {
		t.Errorf("body = %s", w.Body)
	}
}

func TestEmptyListIsAnArray(t *testing.T) {
	w := httptest.NewRecorder()
	_ = httpx.EncodeResponse(t.Context(), w, httpx.ListOf(model.TrimPage[int](nil, model.Page{Limit: 10}, nil)))
	if strings.TrimSpace(w.Body.String()) != "[]" || w.Header().Get("Link") != "" {
		t.Errorf("body = %s, Link = %q", w.Body, w.Header().Get("Link"))
	}
}

func statusOf(err error) int {
	if err == nil {
		return 0
	}
	return httpx.StatusOf(err)
}

// A repeatable parameter keeps every value in order; the others stay
// "at most once".
func TestRepeatableQueryParameters(t *testing.T) {
	tests := []struct {
		name   string
		query  string
		want   []string
		status int
	}{
		{"absent", "", nil, 0},
		{"once", "type=a", []string{"a"}, 0},
		{"repeated in order", "type=b&type=a", []string{"b", "a"}, 0},
		{"another parameter repeated", "type=a&limit=1&limit=2", []string{"a"}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := httpx.ParseQueryRepeating(httptest.NewRequest("GET", "/x?"+tt.query, nil), []string{"type"}, "type", "limit", "cursor")
			got := q.Strings("type")
			q.Page()
			if status := statusOf(q.Err()); status != tt.status || !slices.Equal(got, tt.want) {
				t.Errorf("got %v (status %d), want %v (status %d)", got, status, tt.want, tt.status)
			}
		})
	}
}
