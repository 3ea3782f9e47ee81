//go:build faults

package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// client is an integration calling the gateway with a read-write token.
type client struct {
	http  *http.Client
	token string
}

func newClient(t *testing.T) *client {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {creds.ClientID},
		"client_secret": {creds.ClientSecret}, "resource": {creds.Resource}}
	resp, err := http.PostForm(creds.AuthURL+"/oidc/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return &client{
		http: &http.Client{Timeout: hangBound, Transport: &http.Transport{
			MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second,
		}},
		token: body.AccessToken,
	}
}

// request is one call, kept so a create can be sent again with its key.
type request struct {
	op          string // what it does, for the report
	method      string
	path        string
	body        []byte
	contentType string
	key         string // Idempotency-Key; "" for none
	create      bool
	// target identifies what a create makes (a registration number, a
	// model, a file's SHA-256), to count the copies afterwards.
	target string
}

// answer is what a call got.
type answer struct {
	status     int   // 0: no answer
	err        error // the transport's, when there was no answer
	problem    bool  // a problem body (application/problem+json)
	retryAfter bool
	id         string // a 2xx create's id
	next       string // a page's Link rel="next"
	at         time.Time
	took       time.Duration
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

func (c *client) do(ctx context.Context, r request) answer {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, r.method, stack.RegistryURL+r.path, bytes.NewReader(r.body))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.key != "" {
		req.Header.Set("Idempotency-Key", r.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{err: err, at: start, took: time.Since(start)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, at: start, took: time.Since(start),
		problem:    strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json"),
		retryAfter: resp.Header.Get("Retry-After") != "", next: nextLink(resp.Header.Get("Link"))}
	if err != nil {
		// The status line came but the body broke off: no answer either.
		return answer{err: fmt.Errorf("reading the %d answer: %w", resp.StatusCode, err), at: start, took: a.took}
	}
	if a.ok() && r.create {
		var created struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &created)
		a.id = created.ID
	}
	return a
}

// nextLink is the target of a Link header's rel="next", or "".
func nextLink(header string) string {
	for link := range strings.SplitSeq(header, ",") {
		target, params, _ := strings.Cut(strings.TrimSpace(link), ";")
		if strings.Contains(params, `rel="next"`) {
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}

// call is a request made and what it got.
type call struct {
	request
	answer
}

// hung reports whether the call got no answer within hangBound.
func (c call) hung() bool {
	var timeout interface{ Timeout() bool }
	return c.status == 0 && (errors.As(c.err, &timeout) && timeout.Timeout() || c.took >= hangBound)
}

// load runs the mixed load of one fault: creates of organizations with
// and without an Idempotency-Key, asset types, assets and actions with
// one, uploads with and without one, reads and finds of what was created,
// and the change feed followed page by page, as an integration that
// mirrors the registry does.
type load struct {
	c   *client
	tag string

	mu    sync.Mutex
	calls []call
	n     int
	orgs  []string // registration numbers of acknowledged organizations
	types []string // models of acknowledged asset types
	// assets are the ids of acknowledged assets, newest last; actedOn
	// those an acknowledged action names (the actions service remembers
	// them, so a new action on one asks the assets service nothing).
	assets  []string
	actedOn []string
	ids     map[string]string
	// feed is the next page of the change feed to read: the Link of the
	// last page read, from the newest event when the load began.
	feed string
}

// feedOp is the load's read of the change feed.
const feedOp = "follow the feed"

func newLoad(c *client, tag string) *load {
	return &load{c: c, tag: tag, ids: map[string]string{}, feed: "/events?after=now&limit=20"}
}

// next returns the nth request of the load's cycle.
func (l *load) next() request {
	l.mu.Lock()
	n := l.n
	l.n++
	var org, model, orgID, typeID, newest, known string
	feed := l.feed
	if len(l.assets) > 0 {
		newest = l.assets[len(l.assets)-1]
	}
	if len(l.actedOn) > 0 {
		known = l.actedOn[n%len(l.actedOn)]
	}
	if len(l.orgs) > 0 {
		org = l.orgs[n%len(l.orgs)]
		orgID = l.ids["org:"+org]
	}
	if len(l.types) > 0 {
		model = l.types[n%len(l.types)]
		typeID = l.ids["type:"+l.types[0]]
	}
	l.mu.Unlock()
	name := fmt.Sprintf("%s-%d", l.tag, n)
	switch n % 13 {
	case 8:
		if typeID != "" {
			body, _ := json.Marshal(map[string]string{"serial_number": name, "asset_type_id": typeID})
			return request{op: "create asset", method: "POST", path: "/assets", body: body, contentType: "application/json",
				key: "k-" + name, create: true, target: name}
		}
		return request{op: "list", method: "GET", path: "/assets?limit=5"}
	case 9, 10:
		// An action on the newest asset (its first asks the assets
		// service), or on one an action named already (asks nobody).
		asset, op := newest, "create action, new asset"
		if n%13 == 10 && known != "" {
			asset, op = known, "create action, known asset"
		}
		if asset != "" {
			body, _ := json.Marshal(map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01",
				"source_system": "fault", "source_reference": name})
			return request{op: op, method: "POST", path: "/actions", body: body, contentType: "application/json",
				key: "k-" + name, create: true, target: name}
		}
		return request{op: "list", method: "GET", path: "/actions?limit=5"}
	case 11:
		return request{op: "list", method: "GET", path: "/actions?limit=5"}
	case 12:
		return request{op: feedOp, method: "GET", path: feed}
	case 0:
		return orgCreate(name, "k-"+name)
	case 1:
		return orgCreate(name, "")
	case 2:
		if orgID != "" {
			return request{op: "read", method: "GET", path: "/organizations/" + orgID}
		}
		return request{op: "list", method: "GET", path: "/organizations?limit=5"}
	case 3:
		if org != "" {
			body, _ := json.Marshal(map[string]string{"registration_number": org})
			return request{op: "find", method: "POST", path: "/organizations/find", body: body, contentType: "application/json"}
		}
		return request{op: "list", method: "GET", path: "/organizations?limit=5"}
	case 4:
		return upload(name, "k-"+name, 16<<10)
	case 5:
		body, _ := json.Marshal(map[string]string{"brand": "Fault", "model": name})
		return request{op: "create", method: "POST", path: "/asset_types", body: body, contentType: "application/json",
			key: "k-" + name, create: true, target: name}
	case 6:
		if model != "" {
			return request{op: "find", method: "GET", path: "/asset_types/by_brand_and_model?brand=Fault&model=" + url.QueryEscape(model)}
		}
		return request{op: "list", method: "GET", path: "/asset_types?limit=5"}
	default:
		return upload(name, "", 16<<10)
	}
}

func orgCreate(name, key string) request {
	body, _ := json.Marshal(map[string]string{"name": "Fault " + name, "registration_number": name, "organization_type": "private"})
	return request{op: "create", method: "POST", path: "/organizations", body: body, contentType: "application/json",
		key: key, create: true, target: name}
}

// upload is a document of size bytes whose content is its name repeated,
// so no two uploads share a SHA-256 and copies can be counted by it.
func upload(name, key string, size int) request {
	content := bytes.Repeat([]byte(name+"\n"), size/(len(name)+1)+1)[:size]
	sum := sha256.Sum256(content)
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("document_type", "fault_report")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s.txt"`, name))
	h.Set("Content-Type", "text/plain")
	part, _ := w.CreatePart(h)
	_, _ = part.Write(content)
	_ = w.Close()
	return request{op: "upload", method: "POST", path: "/documents", body: b.Bytes(), contentType: w.FormDataContentType(),
		key: key, create: true, target: hex.EncodeToString(sum[:])}
}

// run sends the load from workers until stop is closed, each pausing
// between calls so the load stays bounded on a small machine.
func (l *load) run(workers int, pause time.Duration) (stop func() []call) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				r := l.next()
				a := l.c.do(context.Background(), r)
				l.add(call{r, a})
				time.Sleep(pause)
			}
		})
	}
	return func() []call {
		close(done)
		wg.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		return append([]call(nil), l.calls...)
	}
}

func (l *load) add(c call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
	if c.op == feedOp && c.ok() && c.next != "" {
		l.feed = c.next
	}
	if !c.ok() || !c.create {
		return
	}
	switch c.path {
	case "/organizations":
		l.orgs = append(l.orgs, c.target)
		l.ids["org:"+c.target] = c.id
	case "/asset_types":
		l.types = append(l.types, c.target)
		l.ids["type:"+c.target] = c.id
	case "/assets":
		l.assets = append(l.assets, c.id)
	case "/actions":
		var a struct {
			AssetID string `json:"asset_id"`
		}
		if json.Unmarshal(c.body, &a) == nil && !slices.Contains(l.actedOn, a.AssetID) {
			l.actedOn = append(l.actedOn, a.AssetID)
		}
	}
}
