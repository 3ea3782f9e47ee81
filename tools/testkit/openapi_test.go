package testkit_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

const doc = `
openapi: 3.1.0
info: {title: things, version: "1"}
servers: [{url: /}]
paths:
  /things:
    post:
      operationId: createThing
      responses:
        '201':
          description: created
          headers:
            Location: {required: true, schema: {type: string}}
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
  /things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
    get:
      operationId: getThing
      responses:
        '200':
          description: the thing
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
        '404':
          description: none
          content:
            application/problem+json:
              schema: {type: object, required: [status], properties: {status: {const: 404}}}
    delete:
      operationId: deleteThing
      responses:
        '204': {description: deleted}
  /things/special:
    get:
      operationId: getSpecial
      responses:
        '200':
          description: special
          content:
            text/plain:
              schema: {type: string}
components:
  schemas:
    Thing:
      type: object
      additionalProperties: false
      required: [id, name]
      properties:
        id: {type: string, format: uuid}
        name: {type: string}
`

const thingID = "0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d"

// recorder is a testing.TB that keeps what would fail the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errors, "\n")
}

func check(t *testing.T, v *testkit.Validator, method, url string, status int, header http.Header, body string) *recorder {
	t.Helper()
	rec := &recorder{TB: t}
	req := httptest.NewRequest(method, url, nil)
	if header == nil {
		header = http.Header{}
	}
	if body != "" && header.Get("Content-Type") == "" {
		header.Set("Content-Type", "application/json")
	}
	resp := &http.Response{StatusCode: status, Header: header, Body: http.NoBody, Request: req}
	v.Check(rec, req, resp, []byte(body))
	return rec
}

func TestValidatorAcceptsConformingResponses(t *testing.T) {
	v := testkit.NewValidator(t, []byte(doc))
	thing := `{"id":"` + thingID + `","name":"x"}`
	cases := []struct {
		name, method, url string
		status            int
		header            http.Header
		body              string
	}{
		{"read", "GET", "http://127.0.0.1:4321/things/" + thingID, 200, nil, thing},
		{"trailing slash", "GET", "http://127.0.0.1:4321/things/" + thingID + "/", 200, nil, thing},
		{"HEAD is GET without a body", "HEAD", "http://127.0.0.1:4321/things/" + thingID, 200, http.Header{"Content-Type": {"application/json"}}, ""},
		{"create with Location", "POST", "http://example.test/things/", 201, http.Header{"Location": {"/things/" + thingID}}, thing},
		{"declared 404", "GET", "http://127.0.0.1:1/things/" + thingID, 404, http.Header{"Content-Type": {"application/problem+json"}}, `{"status":404}`},
		{"no content", "DELETE", "http://127.0.0.1:1/things/" + thingID, 204, nil, ""},
		{"literal path wins over parameter", "GET", "http://127.0.0.1:1/things/special", 200, http.Header{"Content-Type": {"text/plain"}}, "hi"},
		{"404 on an unknown path", "GET", "http://127.0.0.1:1/nothing/here", 404, nil, `{"status":404}`},
		{"405 on an undeclared method", "PUT", "http://127.0.0.1:1/things/" + thingID, 405, nil, `{"status":405}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if rec := check(t, v, c.method, c.url, c.status, c.header, c.body); rec.all() != "" {
				t.Errorf("reported a conforming response:\n%s", rec.all())
			}
		})
	}
}

func TestValidatorCatchesMismatches(t *testing.T) {
	v := testkit.NewValidator(t, []byte(doc))
	cases := []struct {
		name, method, url string
		status            int
		header            http.Header
		body              string
		want              []string // each must appear in the report
	}{
		{"missing required field", "GET", "http://127.0.0.1:1/things/" + thingID, 200, nil,
			`{"id":"` + thingID + `"}`, []string{"GET /things/" + thingID + " → 200", "name"}},
		{"undeclared member", "GET", "http://127.0.0.1:1/things/" + thingID, 200, nil,
			`{"id":"` + thingID + `","name":"x","extra":1}`, []string{"extra"}},
		{"bad format", "GET", "http://127.0.0.1:1/things/" + thingID, 200, nil,
			`{"id":"not-a-uuid","name":"x"}`, []string{"uuid"}},
		{"undeclared status", "GET", "http://127.0.0.1:1/things/" + thingID, 418, nil,
			`{}`, []string{"GET /things/" + thingID + " → 418", "418"}},
		{"missing required header", "POST", "http://127.0.0.1:1/things", 201, nil,
			`{"id":"` + thingID + `","name":"x"}`, []string{"Location"}},
		{"undeclared media type", "GET", "http://127.0.0.1:1/things/" + thingID, 200, http.Header{"Content-Type": {"text/html"}},
			`<p>hi</p>`, []string{"text/html"}},
		{"missing body", "GET", "http://127.0.0.1:1/things/" + thingID, 200, http.Header{"Content-Type": {"application/json"}},
			``, []string{"missing"}},
		{"path not in the document", "GET", "http://127.0.0.1:1/nothing", 200, nil,
			`{}`, []string{"GET /nothing → 200", "not in the document"}},
		{"method not in the document", "PATCH", "http://127.0.0.1:1/things/" + thingID, 200, nil,
			`{}`, []string{"no PATCH operation on /things/{id}"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := check(t, v, c.method, c.url, c.status, c.header, c.body).all()
			if got == "" {
				t.Fatalf("reported nothing")
			}
			t.Logf("report:\n%s", got)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("report does not mention %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestValidatorTransport(t *testing.T) {
	v := testkit.NewValidator(t, []byte(doc))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/bad") {
			w.WriteHeader(http.StatusTeapot)
		}
		fmt.Fprintf(w, `{"id":%q,"name":"x"}`, thingID)
	}))
	defer srv.Close()

	rec := &recorder{TB: t}
	client := &http.Client{Transport: v.Transport(rec, srv.Client().Transport)}
	resp, err := client.Get(srv.URL + "/things/" + thingID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), thingID) {
		t.Errorf("the body was not restored for the caller: %q", body)
	}
	if rec.all() != "" {
		t.Errorf("reported a conforming response:\n%s", rec.all())
	}

	resp, err = client.Get(srv.URL + "/things/bad")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.Contains(rec.all(), "418") {
		t.Errorf("an undeclared status through the transport was not reported: %q", rec.all())
	}
}

func TestValidatorRejectsBadDocuments(t *testing.T) {
	for name, d := range map[string]string{
		"not YAML":           "openapi: [",
		"dangling $ref":      strings.Replace(doc, "#/components/schemas/Thing'}\n  /things/{id}", "#/components/schemas/Nope'}\n  /things/{id}", 1),
		"schema violation":   strings.Replace(doc, "info: {title: things, version: \"1\"}", "info: {version: \"1\"}", 1),
		"not OpenAPI at all": `{"hello": "world"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if d == doc {
				t.Fatal("the test's replacement did not apply")
			}
			rec := &recorder{TB: t}
			testkit.NewValidator(rec, []byte(d))
			if !rec.fatal {
				t.Errorf("accepted a bad document")
			}
		})
	}
}

// A document is built into a validator once per test process: starting a
// service in a test would otherwise compile its schemas every time.
func TestValidatorIsBuiltOncePerDocument(t *testing.T) {
	a, b := testkit.NewValidator(t, []byte(doc)), testkit.NewValidator(t, []byte(doc))
	if a != b {
		t.Error("the same document was built into two validators")
	}
	other := strings.Replace(doc, "title: things", "title: other things", 1)
	if other == doc {
		t.Fatal("the test's replacement did not apply")
	}
	if testkit.NewValidator(t, []byte(other)) == a {
		t.Error("another document got the first one's validator")
	}
}
