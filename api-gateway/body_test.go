package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// serviceAt replaces the parties service of the fixture by h.
func serviceAt(t *testing.T, h http.Handler) func(*Config) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return func(c *Config) { c.Upstreams["parties"] = &srv.URL }
}

// A body over its limit is a 413 however it is framed, whether the gateway
// or the service behind it finds it too large; never a 503 telling the
// client to retry what cannot succeed.
func TestBodyOverItsLimit(t *testing.T) {
	t.Parallel()
	const uploadMax = 8 << 20
	// The service reads what its own limit allows (smaller than the
	// gateway's for /small) and answers 413 past it, as the services do.
	service := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := int64(32 << 20)
		if strings.HasSuffix(r.URL.Path, "/small") {
			limit = 64 << 10
		}
		n, err := io.Copy(io.Discard, io.LimitReader(r.Body, limit+1))
		if err != nil || n > limit {
			w.Header().Set("Content-Type", httpx.ProblemContentType)
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			_, _ = io.WriteString(w, `{"type":"urn:asset-registry:problem:payload-too-large","status":413}`)
			return
		}
		_, _ = fmt.Fprint(w, n)
	})
	f := newGateway(t, func(c *Config) {
		serviceAt(t, service)(c)
		c.UploadMaxSize = uploadMax
	})
	rw := f.issuer.ReadWrite(t)
	const jsonType, uploadType = "application/json", "multipart/form-data; boundary=b"
	tests := []struct {
		name        string
		path        string
		contentType string
		size        int
		status      int
	}{
		{"JSON at the limit", "/organizations", jsonType, httpx.MaxJSONBody, 200},
		{"JSON over the limit", "/organizations", jsonType, httpx.MaxJSONBody + 1, 413},
		{"JSON far over the limit", "/organizations", jsonType, 20 << 20, 413},
		{"upload at the limit", "/organizations", uploadType, uploadMax + httpx.UploadFormOverhead, 200},
		{"upload over the limit", "/organizations", uploadType, uploadMax + httpx.UploadFormOverhead + 1, 413},
		{"over the service's own smaller limit", "/organizations/small", jsonType, 1 << 20, 413},
		{"far over the service's own smaller limit", "/organizations/small", uploadType, 6 << 20, 413},
	}
	for _, tt := range tests {
		for _, framing := range testkit.Framings {
			t.Run(tt.name+", "+framing.Name, func(t *testing.T) {
				// The outcome must not depend on who wins a race between
				// the service's answer and the gateway's writes.
				for range 10 {
					status, body := testkit.PostGenerated(t, f.client.BaseURL+tt.path, rw, tt.contentType, "", tt.size, framing)
					if status != tt.status {
						t.Fatalf("status = %d, want %d: %.300s", status, tt.status, body)
					}
				}
			})
		}
	}
}

// A malformed query is refused by the gateway itself, never passed on
// (a service would have seen what Go's parser left of it).
func TestUnreadableRequestsAreNotForwarded(t *testing.T) {
	t.Parallel()
	f := newGateway(t, nil)
	ro := f.issuer.ReadOnly(t)
	for _, target := range []string{
		"/organizations?registration_number=50%&limit=1000",
		"/organizations?limit=10;registration_number=1",
		"/organizations?cursor=%%%%",
		"/organizations?" + strings.Repeat("x=1&", httpx.MaxQueryParams) + "limit=1",
		"/people?last_name=%00",
		"/people/%00",
	} {
		t.Run(target[:min(len(target), 60)], func(t *testing.T) {
			before := f.upstream.count()
			r := f.client.Do(t, "GET", target, ro, nil)
			if r.Status != 400 || r.Header.Get("Content-Type") != httpx.ProblemContentType {
				t.Errorf("status = %d: %s", r.Status, r.Raw)
			}
			if f.upstream.count() != before {
				t.Error("the request was passed on to the service")
			}
		})
	}
}

// A client that stalls mid-body is cut with a 408 by the gateway, and the
// gateway lets go of its connection to the service too.
func TestStalledBodyThroughGateway(t *testing.T) {
	t.Parallel()
	serviceSaw := make(chan error, 1)
	service := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		serviceSaw <- err
	})
	f := newGateway(t, func(c *Config) {
		serviceAt(t, service)(c)
		c.Server.Read = httpx.ReadLimits{BodyTimeout: 300 * time.Millisecond, UploadMinRate: 1000, UploadRateWindow: time.Second}
	})
	for _, tt := range []struct{ name, contentType string }{
		{"JSON", "application/json"},
		{"upload", "multipart/form-data; boundary=b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(f.client.BaseURL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second)) // a gateway that never answers fails the test instead of hanging it
			fmt.Fprintf(conn, "POST /organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\n"+
				"Content-Length: 100000\r\n\r\n%s", f.issuer.ReadWrite(t), tt.contentType, strings.Repeat("x", 2000))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var p map[string]any
			_ = json.Unmarshal(body, &p)
			if resp.StatusCode != http.StatusRequestTimeout || p["type"] != httpx.ProblemTypePrefix+"request-timeout" || resp.Header.Get("Retry-After") != "" {
				t.Fatalf("%d %v: %s", resp.StatusCode, resp.Header, body)
			}
			select {
			case err := <-serviceSaw:
				if err == nil {
					t.Error("the service read a whole body the client never sent")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the gateway still holds the service's request open")
			}
		})
	}
}

// A small JSON body is read whole before it is forwarded: the service gets
// it whole, with its length, and one that stalls is a 408 from the
// gateway that never reaches the service.
func TestSmallBodyForwardedWhole(t *testing.T) {
	t.Parallel()
	got := make(chan string, 2)
	service := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		got <- fmt.Sprintf("%d %s %v", r.ContentLength, b, err)
		w.WriteHeader(http.StatusCreated)
	})
	f := newGateway(t, func(c *Config) {
		serviceAt(t, service)(c)
		c.Server.Read = httpx.ReadLimits{BodyTimeout: 300 * time.Millisecond, UploadMinRate: 1000, UploadRateWindow: time.Second}
	})
	if status, msg := testkit.PostGenerated(t, f.client.BaseURL+"/organizations", f.issuer.ReadWrite(t), "application/json", "", 500, testkit.WithLength); status != http.StatusCreated {
		t.Fatalf("%d %s", status, msg)
	}
	if s := <-got; s != "500 "+strings.Repeat("x", 500)+" <nil>" {
		t.Fatalf("the service saw %.40q", s)
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(f.client.BaseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST /organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: 500\r\n\r\n%s", f.issuer.ReadWrite(t), strings.Repeat("x", 100))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	select {
	case s := <-got:
		t.Errorf("the service was called: %.40q", s)
	default:
	}
}

// A small JSON body leaves the gateway in the same write as the header,
// so the service's first read holds the whole request.
func TestSmallBodyInOneWrite(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	first := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		buf := make([]byte, 64<<10)
		n, _ := conn.Read(buf)
		first <- string(buf[:n])
		_, _ = io.WriteString(conn, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
	}()
	url := "http://" + ln.Addr().String()
	f := newGateway(t, func(c *Config) { c.Upstreams["parties"] = &url })
	if status, msg := testkit.PostGenerated(t, f.client.BaseURL+"/organizations", f.issuer.ReadWrite(t), "application/json", "", 300, testkit.WithLength); status != http.StatusCreated {
		t.Fatalf("%d %s", status, msg)
	}
	if got := <-first; !strings.HasSuffix(got, "\r\n\r\n"+strings.Repeat("x", 300)) {
		t.Errorf("the first read was %q", got)
	}
}
