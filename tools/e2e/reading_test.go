package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// bodyTimeout is every process's http.body-timeout in this stack (and its
// upload rate window), short so that the stalled-client tests are quick.
const bodyTimeout = 5 * time.Second

// Whatever the registry cannot read completely is refused with a problem
// naming what is wrong, never half-read: a filter dropped by the query
// parser would have widened a list, U+0000 would have reached PostgreSQL
// (a 500), a member named twice would have meant its last value.
func TestRequestsAreReadCompletely(t *testing.T) {
	t.Parallel()
	rw := readWrite(t)
	gw := gateway()
	org := testkit.Expect(t, gw.Do(t, "POST", "/organizations", rw, map[string]any{
		"name": "Lesbar AS", "registration_number": "50%", "organization_type": "private"}), 201).JSON()
	testkit.Expect(t, gw.Do(t, "POST", "/organizations", rw, map[string]any{
		"name": "Annen AS", "registration_number": "other-50", "organization_type": "private"}), 201)
	if got := testkit.Expect(t, gw.Do(t, "GET", "/organizations?registration_number=50%25", rw, nil), 200).List(); len(got) != 1 || got[0]["id"] != org["id"] {
		t.Fatalf("the escaped filter: %v", got)
	}
	params := strings.Repeat("zz=1&", 10_001)
	tests := []struct {
		name, method, path string
		body               any
		status             int
		field              string // named in errors, if any
	}{
		{"a filter with a bad percent escape", "GET", "/organizations?registration_number=50%&limit=1000", nil, 400, "registration_number"},
		{"a semicolon between parameters", "GET", "/organizations?limit=1000;registration_number=50", nil, 400, "limit"},
		{"a cursor with bad escapes", "GET", "/organizations?cursor=%%%%", nil, 400, "cursor"},
		{"past Go's own 10,000 parameters", "GET", "/organizations?" + params + "registration_number=50%25", nil, 400, ""},
		{"U+0000 in a query value", "GET", "/people?last_name=a%00", nil, 400, "last_name"},
		{"U+0000 in a path segment", "GET", "/organizations/%00", nil, 400, ""},
		{"an upper-case id", "GET", "/organizations/" + strings.ToUpper(org["id"].(string)), nil, 400, "id"},
		{"U+0000 in a body string", "POST", "/organizations", `{"name":"a\u0000b","registration_number":"nul-1","organization_type":"private"}`, 422, "name"},
		{"U+0000 in a patch", "PATCH", "/organizations/" + org["id"].(string), `{"tax_registration_number":"\u0000"}`, 422, "tax_registration_number"},
		{"a lone surrogate", "POST", "/people", `{"first_name":"\ud800","last_name":"x"}`, 422, "first_name"},
		{"a member twice", "POST", "/people", `{"first_name":"a","first_name":"b","last_name":"x"}`, 400, "first_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testkit.Expect(t, gw.Do(t, tt.method, tt.path, rw, tt.body), tt.status)
			if tt.field != "" && (len(r.Fields()) != 1 || r.Fields()[0] != tt.field) {
				t.Errorf("fields = %v, want %s", r.Fields(), tt.field)
			}
		})
	}

	// Thousands of problems: a bounded answer.
	members := make([]string, 5000)
	for i := range members {
		members[i] = fmt.Sprintf(`"unknown_%d":1`, i)
	}
	r := testkit.Expect(t, gw.Do(t, "POST", "/people", rw, "{"+strings.Join(members, ",")+"}"), 422)
	if len(r.Fields()) != httpx.MaxFieldErrors || r.JSON()["errors_omitted"] != float64(5000-httpx.MaxFieldErrors) || len(r.Raw) > 8<<10 {
		t.Errorf("5,000 unknown members: %d listed, errors_omitted %v, %d bytes", len(r.Fields()), r.JSON()["errors_omitted"], len(r.Raw))
	}
	// Nothing above was stored.
	if got := testkit.Expect(t, gw.Do(t, "GET", "/organizations?registration_number=nul-1", rw, nil), 200).List(); len(got) != 0 {
		t.Errorf("stored: %v", got)
	}
}

// What net/http answers by itself, and header fields over their limit,
// are problems too.
func TestUnreadableRequestsThroughGateway(t *testing.T) {
	t.Parallel()
	rw := readWrite(t)
	tests := []struct {
		name    string
		request string
		status  int
	}{
		{"a malformed request line", "GET /organizations HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400},
		{"a malformed header field", "GET /organizations HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", 400},
		{"header fields over 64 KiB", "GET /organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + rw + "\r\nX-Padding: " +
			strings.Repeat("p", 64<<10) + "\r\n\r\n", 431},
		{"header fields over net/http's limit", "GET /organizations HTTP/1.1\r\nHost: x\r\nX-Padding: " + strings.Repeat("p", 2<<20) + "\r\n\r\n", 431},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawExchange(t, tt.request)
			var p map[string]any
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != httpx.ProblemContentType || json.Unmarshal(body, &p) != nil ||
				p["request_id"] != resp.Header.Get("X-Request-Id") {
				t.Errorf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		})
	}
}

// A body over its limit is a 413 however it is framed: with a length,
// chunked, and chunked after Expect: 100-continue (as curl sends large
// bodies), never a 503 that tells the client to retry. Here the documents
// service's limit is smaller than the gateway's, so the service refuses
// uploads while the gateway is still sending.
func TestBodyOverItsLimitThroughGateway(t *testing.T) {
	// Serial: it counts every document row and object in the shared schema and bucket.
	rw := readWrite(t)
	const upload = "multipart/form-data; boundary=b"
	rowsBefore, objectsBefore := stored(t)
	for _, tt := range []struct {
		name, path, contentType, prefix string
		size                            int
	}{
		{"JSON", "/organizations", "application/json", `{"name":"`, 2 << 20},
		{"an upload", "/documents", upload, "--b\r\nContent-Disposition: form-data; name=\"document_type\"\r\n\r\nreport\r\n" +
			"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\r\n", maxUpload * 3},
	} {
		for _, framing := range testkit.Framings {
			t.Run(tt.name+", "+framing.Name, func(t *testing.T) {
				for range 5 {
					status, body := testkit.PostGenerated(t, stack.RegistryURL+tt.path, rw, tt.contentType, tt.prefix, tt.size, framing)
					if status != http.StatusRequestEntityTooLarge {
						t.Fatalf("status = %d, want 413: %.300s", status, body)
					}
				}
			})
		}
	}
	if rows, objects := stored(t); rows != rowsBefore || objects > objectsBefore {
		t.Errorf("left behind: %d rows, %d objects (before %d, %d)", rows, objects, rowsBefore, objectsBefore)
	}
}

// A client that stalls mid-body is cut, with a 408, when its body is late
// (JSON) or its pace too slow (an upload); it does not hold a connection
// of the gateway, nor one of a service, for as long as it likes.
func TestStalledClientThroughGateway(t *testing.T) {
	t.Parallel()
	rw := readWrite(t)
	for _, tt := range []struct{ name, path, contentType, body string }{
		{"JSON", "/organizations", "application/json", `{"name":"Treg`},
		{"an upload", "/documents", "multipart/form-data; boundary=b",
			"--b\r\nContent-Disposition: form-data; name=\"document_type\"\r\n\r\nreport\r\n" +
				"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.bin\"\r\n\r\n" + strings.Repeat("x", 2000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: 100000\r\n\r\n",
				tt.path, rw, tt.contentType)
			start := time.Now()
			resp, body := rawExchange(t, head+tt.body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "request-timeout") {
				t.Fatalf("%d: %s", resp.StatusCode, body)
			}
			t.Logf("cut after %s (http.body-timeout and the upload window are %s)", time.Since(start).Round(time.Millisecond), bodyTimeout)
		})
	}
}

// rawExchange sends request as written on a fresh connection to the
// gateway and reads the answer.
func rawExchange(t *testing.T, request string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(stack.RegistryURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(4 * bodyTimeout)) // a gateway that never answers fails the test instead of hanging it
	go func() { _, _ = io.WriteString(conn, request) }()  // the gateway may answer before it has read it all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}
