// Package peer is how one registry service calls another. A service calls
// its peers with its own machine identity (a client of the identity
// provider holding the internal scope), on internal paths that the gateway
// never routes and that an integration's token cannot call; it carries the
// original caller's subject, the request id and the trace context along,
// bounds every call with a timeout, and turns a peer that cannot answer
// into a 503 with Retry-After for its own caller, never a hang.
package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
)

// InternalPrefix starts every internal path. The gateway routes only the
// public resources' prefixes, so nothing under it is reachable from
// outside; services require the internal scope on it (auth.ScopeFor).
const InternalPrefix = auth.InternalPrefix

// Config of a service's calls to its peers.
type Config struct {
	URLs         map[string]*string // base URL per peer
	TokenURL     string             // token endpoint; default: the issuer's /oidc/token
	ClientID     string             // this service's machine client
	ClientSecret string
	Timeout      time.Duration // per call, including the token request
	// MaxInFlight bounds the calls to one peer at a time (a bulkhead): a
	// slow peer then holds at most this many of the caller's requests,
	// and the ones beyond it are a 503 at once rather than a queue that
	// grows with the peer's delay. 0: no bound.
	MaxInFlight int
	// Breaker opens per peer after consecutive timeouts or connection
	// failures; its zero value never opens.
	Breaker BreakerConfig
	// TokenSource replaces the client-credentials flow (tests).
	TokenSource oauth2.TokenSource
	// Logger hears the breakers' changes of state; nil: none.
	Logger log.Logger
}

// RegisterFlags adds peer.<name>.url (env PEER_<NAME>_URL) for each peer,
// and the machine identity (PEER_CLIENT_ID, PEER_CLIENT_SECRET).
func (c *Config) RegisterFlags(fs *flag.FlagSet, peers []string) {
	c.URLs = map[string]*string{}
	for _, p := range peers {
		c.URLs[p] = fs.String("peer."+p+".url", "", "base URL of the "+p+" service, which this service calls")
	}
	fs.StringVar(&c.TokenURL, "peer.token-url", "", "token endpoint for this service's own machine identity (default: the issuer's token_endpoint, from its discovery document)")
	fs.StringVar(&c.ClientID, "peer.client-id", "", "this service's machine client at the identity provider (holds the registry:internal scope)")
	fs.StringVar(&c.ClientSecret, "peer.client-secret", "", "the machine client's secret")
	fs.DurationVar(&c.Timeout, "peer.timeout", 5*time.Second, "upper bound on one call to a peer")
	fs.IntVar(&c.MaxInFlight, "peer.max-in-flight", 32, "calls to one peer at a time; more are answered 503 with Retry-After at once (0: no bound)")
	c.Breaker.RegisterFlags(fs, "peer", "a peer")
}

// Clients are the configured peers of one service.
type Clients struct {
	clients map[string]*Client
}

// NewClients builds a client per configured peer. issuer and audience are
// the service's own OIDC settings: its machine identity asks the same
// issuer for a token for the same audience as its callers'.
func NewClients(cfg Config, issuer, audience string) (*Clients, error) {
	cs := &Clients{clients: map[string]*Client{}}
	var configured []string
	for name, raw := range cfg.URLs {
		if raw != nil && *raw != "" {
			configured = append(configured, name)
		}
	}
	if len(configured) == 0 {
		return cs, nil
	}
	tokens := cfg.TokenSource
	if tokens == nil {
		if cfg.ClientID == "" || cfg.ClientSecret == "" {
			return nil, fmt.Errorf("peer: peer.client-id and peer.client-secret are required to call %s", strings.Join(configured, ", "))
		}
		cc := clientcredentials.Config{
			ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.TokenURL,
			Scopes: []string{auth.ScopeInternal},
			// The registry's address as an RFC 8707 resource indicator, and
			// again as "audience", which many issuers (ORY Hydra, Auth0)
			// read instead; RFC 6749 §3.2 has servers ignore parameters
			// they do not know, so each issuer takes the one it knows.
			EndpointParams: url.Values{"resource": {audience}, "audience": {audience}},
		}
		// The token client gets the same bound as every call, so a stuck
		// identity provider cannot hang a request either.
		httpClient := &http.Client{Timeout: cfg.Timeout}
		tokenCtx := context.WithValue(context.Background(), oauth2.HTTPClient, httpClient)
		if cc.TokenURL == "" {
			tokens = newOwnToken((&discovered{issuer: issuer, config: cc, ctx: tokenCtx, client: httpClient}).fetch)
		} else {
			tokens = newOwnToken(func() (*oauth2.Token, error) { return cc.Token(tokenCtx) })
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64 // few peers, many concurrent calls: keep connections alive
	rt := otelhttp.NewTransport(&oauth2.Transport{Source: ownTokens{tokens}, Base: transport})
	for _, name := range configured {
		base, err := url.Parse(*cfg.URLs[name])
		if err != nil || base.Scheme == "" || base.Host == "" {
			return nil, fmt.Errorf("peer: peer.%s.url %q is not an absolute URL", name, *cfg.URLs[name])
		}
		c := &Client{name: name, base: base, timeout: cfg.Timeout, http: &http.Client{Transport: rt},
			breaker: NewBreaker(name, cfg.Breaker, breakerMetrics, logChange(cfg.Logger))}
		if cfg.MaxInFlight > 0 {
			c.slots = make(chan struct{}, cfg.MaxInFlight)
		}
		cs.clients[name] = c
	}
	return cs, nil
}

// Get returns the client of a peer, or nil when that peer is not
// configured (a partial installation: what it would answer is unknown).
func (cs *Clients) Get(name string) *Client {
	if cs == nil {
		return nil
	}
	return cs.clients[name]
}

// Client calls one peer.
type Client struct {
	name    string
	base    *url.URL
	timeout time.Duration
	http    *http.Client
	slots   chan struct{} // the bulkhead: one per call in flight; nil: no bound
	breaker *Breaker
}

// Name is the peer's service name.
func (c *Client) Name() string { return c.name }

// OnBehalfOfHeader carries the original caller's subject to a peer. A
// service believes it only from a token holding the internal scope.
const OnBehalfOfHeader = auth.OnBehalfOfHeader

// Call sends in (nil for none) as JSON to path and decodes a 2xx answer
// into out (nil to ignore it). A peer that cannot be reached, times out or
// fails (5xx) is apperr "unavailable"; another problem the peer answers is
// returned with its kind and detail, for the caller to map.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) (err error) {
	done, err := c.breaker.Allow("the " + c.name + " service")
	if err != nil {
		return err
	}
	caller := ctx
	defer func() { done(c.outcome(caller, err)) }()
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		default:
			inFlight.WithLabelValues(c.name).Inc()
			return apperr.Unavailable("the "+c.name+" service",
				fmt.Errorf("peer %s: %d %w", c.name, cap(c.slots), errBulkhead)).WithHeader("Retry-After", "1")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("peer %s: encode request: %w", c.name, err)
		}
		body = bytes.NewReader(raw)
	}
	// path may carry a query: JoinPath would escape its "?".
	path, query, _ := strings.Cut(path, "?")
	target := c.base.JoinPath(path)
	target.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, method, target.String(), body)
	if err != nil {
		return fmt.Errorf("peer %s: %w", c.name, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if id := httpx.RequestInfoFrom(ctx).ID; id != "" {
		req.Header.Set(httpx.RequestIDHeader, id)
	}
	if sub := auth.Subject(ctx); sub != "" {
		req.Header.Set(OnBehalfOfHeader, sub)
		if org := auth.Organization(ctx); org != "" {
			req.Header.Set(auth.OnBehalfOfOrganizationHeader, org)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unavailable(fmt.Errorf("%w: %w", errNoAnswer, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return c.unavailable(fmt.Errorf("%w: %w", errNoAnswer, err))
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if out == nil || resp.StatusCode == http.StatusNoContent {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("peer %s: decode %s %s answer: %w", c.name, method, path, err)
		}
		return nil
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests,
		// Our own identity refused (a secret mid-rotation, keys being
		// refreshed): nothing the caller did wrong, and it may pass.
		resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		return c.unavailable(fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, raw))
	}
	// A 4xx is a mistake of ours or a fact about the target; either way
	// the caller decides what its own client sees.
	var p httpx.Problem
	_ = json.Unmarshal(raw, &p)
	return &apperr.Error{Kind: kindOf(resp.StatusCode), Detail: p.Detail, Fields: p.Errors}
}

// outcome is what a call's error says about the peer for its breaker:
// only a call that got no answer within the peer's own timeout, or whose
// connection failed, is the peer's failure. The caller gone, a bulkhead's
// refusal and a token the issuer would not give are not the peer's doing.
func (c *Client) outcome(caller context.Context, err error) Outcome {
	var token tokenError
	switch {
	case err == nil:
		return Answered
	case caller.Err() != nil, errors.As(err, &token), errors.Is(err, errBulkhead):
		return Ignored
	case errors.Is(err, errNoAnswer):
		return Failed
	}
	return Answered // whatever it said (a 4xx, a 5xx, our identity refused), the peer answered
}

// errNoAnswer marks the failures that are the peer's silence: a timeout,
// a connection refused, reset or cut.
var errNoAnswer = errors.New("no answer")

// errBulkhead marks a call refused by peer.max-in-flight.
var errBulkhead = errors.New("peer.max-in-flight calls in flight already")

// tokenError is the service's own token request failing (the issuer
// down or slow): the call never reached the peer.
type tokenError struct{ err error }

func (e tokenError) Error() string { return "own token: " + e.err.Error() }
func (e tokenError) Unwrap() error { return e.err }

// ownTokens marks the token source's failures as tokenError.
type ownTokens struct{ src oauth2.TokenSource }

func (o ownTokens) Token() (*oauth2.Token, error) {
	t, err := o.src.Token()
	if err != nil {
		return nil, tokenError{err}
	}
	return t, nil
}

// breakerMetrics are the peers' breakers, by peer.
var breakerMetrics = BreakerMetrics{
	State: promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "peer_breaker_state",
		Help: "State of the breaker of calls to a peer: 0 closed, 1 half-open (one probe decides), 2 open (calls refused at once with 503).",
	}, []string{"peer"}),
	Opened: promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "peer_breaker_opened_total",
		Help: "Times the breaker of calls to a peer opened after consecutive timeouts or connection failures.",
	}, []string{"peer"}),
}

func logChange(logger log.Logger) func(name, from, to string) {
	if logger == nil {
		return nil
	}
	return func(name, from, to string) {
		level.Warn(logger).Log("msg", "peer breaker changed state", "peer", name, "from", from, "to", to)
	}
}

func (c *Client) unavailable(err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("peer %s: %w", c.name, err)
	}
	return apperr.Unavailable("the "+c.name+" service", fmt.Errorf("peer %s: %w", c.name, err))
}

func kindOf(status int) apperr.Kind {
	switch status {
	case http.StatusNotFound:
		return apperr.KindNotFound
	case http.StatusConflict:
		return apperr.KindConflict
	case http.StatusUnprocessableEntity:
		return apperr.KindInvalid
	}
	// 400, 405, 413, 415: the request we built is wrong, a bug of ours.
	return apperr.KindInternal
}

// inFlight counts the calls refused because a peer had its bound of calls
// in flight: a peer slower than its callers' pace.
var inFlight = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "peer_calls_refused_total",
	Help: "Calls to a peer refused at once because peer.max-in-flight calls to it were in flight.",
}, []string{"peer"})

// discovered fetches client-credentials tokens from an issuer whose
// token endpoint comes from its discovery document (every issuer names
// its own: /oidc/token here, /oauth2/token at ORY Hydra), read when the
// first token is needed, so a service can start before its issuer.
type discovered struct {
	issuer string
	config clientcredentials.Config
	ctx    context.Context
	client *http.Client

	mu       sync.Mutex
	endpoint string
}

// fetch asks the issuer for a token (ownToken keeps it).
func (d *discovered) fetch() (*oauth2.Token, error) {
	d.mu.Lock()
	if d.endpoint == "" {
		endpoint, err := tokenEndpoint(d.ctx, d.client, d.issuer)
		if err != nil {
			d.mu.Unlock()
			return nil, err
		}
		d.endpoint = endpoint
	}
	cc := d.config
	cc.TokenURL = d.endpoint
	d.mu.Unlock()
	return cc.Token(d.ctx)
}

// tokenEndpoint reads token_endpoint from the issuer's OpenID configuration.
func tokenEndpoint(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("peer: discover the token endpoint: %w", err)
	}
	defer resp.Body.Close()
	var doc struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("peer: discover the token endpoint: %s answered %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil || doc.TokenEndpoint == "" {
		return "", fmt.Errorf("peer: %s names no token_endpoint (%v); set peer.token-url", u, err)
	}
	return doc.TokenEndpoint, nil
}
