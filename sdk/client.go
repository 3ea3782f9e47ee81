package registry

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Config says where the registry is and who calls it.
type Config struct {
	URL          string // the registry's base address (REGISTRY_URL)
	AuthURL      string // the identity provider (AUTH_URL); its token endpoint is {AuthURL}/oidc/token
	ClientID     string
	ClientSecret string
	// Resource is sent as the token request's resource (RESOURCE); the
	// registry's base address when empty.
	Resource string
	// Tokens replaces the client-credentials source (AuthURL, ClientID and
	// ClientSecret are then unused).
	Tokens oauth2.TokenSource
	// HTTPClient for every call; a client with a 60 s timeout when nil.
	HTTPClient *http.Client
	// MaxAttempts per logical call, the first included (default 8).
	MaxAttempts int
	// MaxWait bounds one wait between attempts (default 30 s), whatever
	// Retry-After says.
	MaxWait time.Duration
	// UserAgent is sent on every call.
	UserAgent string
}

// Client calls the registry. It is safe for concurrent use.
type Client struct {
	base        *url.URL
	http        *http.Client
	streaming   *http.Client // http without its overall timeout: a download lasts as long as its bytes take
	tokens      oauth2.TokenSource
	maxAttempts int
	maxWait     time.Duration
	userAgent   string
}

// New checks the configuration and makes a client; it calls nothing yet.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		return nil, errors.New("registry: no registry URL (REGISTRY_URL)")
	}
	base, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("registry: the registry URL %q is not an absolute http(s) URL", cfg.URL)
	}
	c := &Client{base: base, http: cfg.HTTPClient, tokens: cfg.Tokens, maxAttempts: cfg.MaxAttempts,
		maxWait: cfg.MaxWait, userAgent: cfg.UserAgent}
	if c.http == nil {
		// Keep as many idle connections as calls in flight: the default of
		// two per host makes a concurrent client (the import's workers)
		// open and close a connection per call.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		c.http = &http.Client{Timeout: 60 * time.Second, Transport: t}
	}
	streaming := *c.http
	streaming.Timeout = 0
	c.streaming = &streaming
	if c.maxAttempts <= 0 {
		c.maxAttempts = 8
	}
	if c.maxWait <= 0 {
		c.maxWait = 30 * time.Second
	}
	if c.userAgent == "" {
		c.userAgent = "assetregistry-go-sdk"
	}
	if c.tokens == nil {
		switch {
		case cfg.AuthURL == "":
			return nil, errors.New("registry: no identity provider URL (AUTH_URL)")
		case cfg.ClientID == "":
			return nil, errors.New("registry: no client id (CLIENT_ID)")
		case cfg.ClientSecret == "":
			return nil, errors.New("registry: no client secret (CLIENT_SECRET)")
		}
		resource := cfg.Resource
		if resource == "" {
			resource = base.String()
		}
		c.tokens = NewTokenSource(context.Background(), cfg.AuthURL, cfg.ClientID, cfg.ClientSecret, resource, c.http)
	}
	return c, nil
}

// CallOption changes one call.
type CallOption func(*call)

// IdempotencyKey sets the key of a create, so that repeating the call
// (after a crash, from another process) replays its first answer instead
// of creating again. Without it each logical call gets a random key, kept
// across its own retries.
func IdempotencyKey(key string) CallOption { return func(c *call) { c.idempotencyKey = key } }

// IfMatch makes an update or delete conditional on the ETag a read gave
// (the resource's ETag field): a change made since is a 412 Problem.
func IfMatch(etag string) CallOption { return func(c *call) { c.ifMatch = etag } }

// call is one logical call, sent in one or more attempts.
type call struct {
	method, path   string
	query          url.Values
	body           func() (io.Reader, string, error) // a fresh body and its content type per attempt
	idempotencyKey string
	ifMatch        string
	keyed          bool // the operation takes an Idempotency-Key
	// sink, when set, reads a successful answer's body as it arrives
	// instead of the body being held in memory; once it has started, the
	// call is not retried (what it consumed cannot be taken back).
	sink func(io.Reader) error
}

// sinkError is a failure while a sink read a successful answer.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

func jsonBody(v any) func() (io.Reader, string, error) {
	raw, err := json.Marshal(v)
	return func() (io.Reader, string, error) {
		return bytes.NewReader(raw), "application/json", err
	}
}

// response is a fully read answer of a successful call.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends the call, retrying what can be retried without a duplicate:
// 429 and 503 (after Retry-After), a 409 saying the same key is still in
// flight, and a connection that failed, for reads and keyed writes. A 401
// is retried once with a new token.
func (c *Client) do(ctx context.Context, cl *call, opts ...CallOption) (*response, error) {
	for _, o := range opts {
		o(cl)
	}
	if cl.keyed && cl.idempotencyKey == "" {
		cl.idempotencyKey = randomKey()
	}
	safe := cl.method == http.MethodGet || cl.method == http.MethodHead || cl.idempotencyKey != "" ||
		cl.method == http.MethodPut || cl.method == http.MethodDelete
	refreshed := false
	start := time.Now()
	for attempt := 1; ; attempt++ {
		resp, token, err := c.attempt(ctx, cl)
		var wait time.Duration
		switch {
		case err != nil:
			var sunk *sinkError
			if errors.As(err, &sunk) {
				return nil, sunk.err
			}
			if ctx.Err() != nil || !safe || !retryableNetError(err) {
				return nil, err
			}
			wait = backoff(attempt)
		case resp.status < 300:
			return resp, nil
		default:
			p := problemFrom(&http.Response{StatusCode: resp.status, Header: resp.header}, resp.body)
			switch {
			case resp.status == http.StatusUnauthorized && !refreshed:
				if inv, ok := c.tokens.(invalidator); ok {
					inv.Invalidate(token)
					refreshed = true
					attempt--
					continue
				}
				return nil, p
			case resp.status == http.StatusConflict && cl.idempotencyKey != "" && p.Kind() == "conflict" && p.RetryAfter > 0:
				// The same key is still running: an earlier attempt (or a
				// process killed mid-call) holds it until it ends or its
				// lease runs out. Waiting for it costs no attempt.
				if time.Since(start) > inFlightWait {
					return nil, p
				}
				attempt--
				wait, err = p.RetryAfter, p
			case resp.status == http.StatusTooManyRequests, resp.status == http.StatusServiceUnavailable:
				wait = p.RetryAfter
				if wait <= 0 {
					wait = backoff(attempt)
				}
				err = p
			default:
				return nil, p
			}
		}
		if attempt >= c.maxAttempts {
			return nil, err
		}
		wait = min(wait, c.maxWait)
		wait += time.Duration(rand.Int64N(int64(wait)/5 + 1)) // jitter: clients told the same wait spread out
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), err)
		case <-time.After(wait):
		}
	}
}

func (c *Client) attempt(ctx context.Context, cl *call) (*response, *oauth2.Token, error) {
	token, err := c.tokens.Token()
	if err != nil {
		return nil, nil, tokenError(err)
	}
	u := c.base.JoinPath(cl.path)
	if strings.HasSuffix(cl.path, "?") || cl.query != nil {
		u.RawQuery = cl.query.Encode()
	}
	var body io.Reader
	contentType := ""
	if cl.body != nil {
		if body, contentType, err = cl.body(); err != nil {
			return nil, token, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, token, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	token.SetAuthHeader(req)
	if cl.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", cl.idempotencyKey)
	}
	if cl.ifMatch != "" {
		req.Header.Set("If-Match", cl.ifMatch)
	}
	client := c.http
	if cl.sink != nil {
		client = c.streaming
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, token, fmt.Errorf("registry: %s %s: %w", cl.method, cl.path, err)
	}
	defer resp.Body.Close()
	if cl.sink != nil && resp.StatusCode < 300 {
		if err := cl.sink(resp.Body); err != nil {
			return nil, token, &sinkError{fmt.Errorf("registry: %s %s: reading the answer: %w", cl.method, cl.path, err)}
		}
		return &response{status: resp.StatusCode, header: resp.Header}, token, nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, token, fmt.Errorf("registry: %s %s: reading the answer: %w", cl.method, cl.path, err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: raw}, token, nil
}

// tokenError says what went wrong getting a token in one line: the
// identity provider's answer (invalid_client for a wrong secret) or why it
// could not be reached.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := re.ErrorCode
		if code == "" {
			code = strconv.Itoa(re.Response.StatusCode)
		}
		if code == "invalid_client" {
			return &AuthError{Code: code, Message: "the identity provider refused the client id or secret (invalid_client)"}
		}
		return &AuthError{Code: code, Message: "the identity provider refused the token request: " + code + " " + re.ErrorDescription}
	}
	return &AuthError{Message: "cannot get a token from the identity provider: " + err.Error(), Err: err}
}

// AuthError is a failure to get an access token.
type AuthError struct {
	Code    string // the OAuth error code (invalid_client, invalid_target, ...), if the provider answered
	Message string
	Err     error
}

func (e *AuthError) Error() string { return "registry: " + e.Message }
func (e *AuthError) Unwrap() error { return e.Err }

func retryableNetError(err error) bool {
	var ne net.Error
	var op *net.OpError
	return errors.As(err, &ne) || errors.As(err, &op) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// inFlightWait bounds the wait for a key another request holds: longer
// than the registry's leases of keys for all but uploads.
const inFlightWait = 3 * time.Minute

func backoff(attempt int) time.Duration {
	return min(time.Duration(1<<min(attempt-1, 6))*250*time.Millisecond, 15*time.Second)
}

func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func randomKey() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func asProblem(err error, p **Problem) bool { return errors.As(err, p) }
