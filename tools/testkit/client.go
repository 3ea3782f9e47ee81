// The HTTP client the registry's API tests share: it
// sends JSON the way integrations do and checks that every error answer is
// a well-formed RFC 9457 problem.

package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// Client calls one base URL.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// Response is a fully read answer.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
}

// JSON decodes an object body.
func (r Response) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Raw, &m)
	return m
}

// List decodes an array body.
func (r Response) List() []map[string]any {
	var l []map[string]any
	_ = json.Unmarshal(r.Raw, &l)
	return l
}

// Fields returns the field names of a problem's errors, in order.
func (r Response) Fields() []string {
	var out []string
	errs, _ := r.JSON()["errors"].([]any)
	for _, e := range errs {
		out = append(out, e.(map[string]any)["field"].(string))
	}
	return out
}

// Do sends a request. body may be nil, a string or an io.Reader (sent as
// is) or a value (marshalled); bodies get Content-Type application/json unless headers
// (name, value pairs) say otherwise.
func (c Client) Do(t testing.TB, method, path, token string, body any, headers ...string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case io.Reader:
		rd = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.BaseURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
}

// The problem documents' media type and type prefix, as the contract
// states them: the test kit reads answers as a client does, knowing only
// the wire.
const (
	problemContentType = "application/problem+json"
	problemTypePrefix  = "urn:asset-registry:problem:"
)

// Expect fails the test unless r has status; an error status must come
// with a complete problem body whose request_id matches X-Request-Id.
func Expect(t testing.TB, r Response, status int) Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d: %s", r.Status, status, r.Raw)
	}
	if ids := r.Header.Values("X-Request-Id"); len(ids) != 1 {
		t.Errorf("X-Request-Id = %v, want exactly one", ids)
	}
	if status >= 400 {
		p := r.JSON()
		typ, _ := p["type"].(string)
		if ct := r.Header.Get("Content-Type"); ct != problemContentType {
			t.Errorf("Content-Type = %q, want %s", ct, problemContentType)
		}
		if p["status"] != float64(status) || !strings.HasPrefix(typ, problemTypePrefix) || p["title"] == "" ||
			p["instance"] == "" || p["request_id"] == "" || p["request_id"] != r.Header.Get("X-Request-Id") {
			t.Errorf("problem body = %s (X-Request-Id %q)", r.Raw, r.Header.Get("X-Request-Id"))
		}
	}
	return r
}

// FormPart is one part of a multipart/form-data body; Filename "" makes it
// a plain field.
type FormPart struct {
	Name, Filename, ContentType, Content string
}

// Field is a plain form field.
func Field(name, value string) FormPart { return FormPart{Name: name, Content: value} }

// Multipart builds a multipart/form-data body of parts, in order, and its
// Content-Type (with the boundary).
func Multipart(t testing.TB, parts ...FormPart) (body, contentType string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disposition := fmt.Sprintf(`form-data; name=%q`, p.Name)
		if p.Filename != "" {
			disposition += fmt.Sprintf(`; filename=%q`, p.Filename)
		}
		h.Set("Content-Disposition", disposition)
		if p.ContentType != "" {
			h.Set("Content-Type", p.ContentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write([]byte(p.Content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String(), w.FormDataContentType()
}
