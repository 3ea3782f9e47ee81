package idp

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

const registry = "https://registry.example.test"

// testIdP is an IdP served on a local port, in a schema of its own.
type testIdP struct {
	*Provider
	issuer string
	clock  *fakeClock
}

// newTestIdP starts an IdP. The listener is opened first because the
// issuer (its URL) is part of the configuration.
func newTestIdP(t *testing.T, previousKeyFiles ...string) *testIdP {
	t.Helper()
	return newTestIdPWith(t, func(c *Config) { c.PreviousKeyFiles = previousKeyFiles })
}

// newTestIdPWith starts an IdP whose configuration configure changed.
func newTestIdPWith(t *testing.T, configure func(*Config)) *testIdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	cfg := Config{
		Issuer:         issuer,
		SigningKeyFile: filepath.Join(t.TempDir(), "keys", "signing.pem"),
		Database:       store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t)},
	}
	configure(&cfg)
	p, err := Open(context.Background(), cfg, log.NewNopLogger())
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	clock := &fakeClock{now: time.Now()}
	p.Clients.now = clock.Now // before the server starts: no request sees time.Now
	p.throttle.now = clock.Now
	srv := httptest.NewUnstartedServer(p.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return &testIdP{Provider: p, issuer: issuer, clock: clock}
}

func (ti *testIdP) createClient(t *testing.T, id string, scopes, resources []string) string {
	t.Helper()
	secret, err := ti.Clients.CreateClient(context.Background(), id, scopes, resources)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// tokenCall is one request to the token endpoint.
type tokenCall struct {
	form        url.Values
	contentType string     // default: form-encoded
	basic       *[2]string // client id and secret for HTTP Basic
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (ti *testIdP) post(t *testing.T, c tokenCall) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ti.issuer+"/oidc/token", strings.NewReader(c.form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	ct := c.contentType
	if ct == "" {
		ct = "application/x-www-form-urlencoded"
	}
	req.Header.Set("Content-Type", ct)
	if c.basic != nil {
		req.SetBasicAuth(url.QueryEscape(c.basic[0]), url.QueryEscape(c.basic[1]))
	}
	return do(t, req)
}

func (ti *testIdP) get(t *testing.T, path string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ti.issuer+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	return doWith(t, http.DefaultClient, req)
}

// doWith sends req with client c (one bound to another source address, say).
func doWith(t *testing.T, c *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s %s: %d with a body that is not a JSON object: %s", req.Method, req.URL.Path, resp.StatusCode, raw)
	}
	return a
}

// token gets an access token with client_secret_post, failing the test
// unless it is issued.
func (ti *testIdP) token(t *testing.T, id, secret string, extra url.Values) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	for k, v := range extra {
		form[k] = v
	}
	a := ti.post(t, tokenCall{form: form})
	if a.status != http.StatusOK {
		t.Fatalf("token for %s: %d %v", id, a.status, a.body)
	}
	return a.body["access_token"].(string)
}

// fakeClock is the secret-expiry clock of a test IdP.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
