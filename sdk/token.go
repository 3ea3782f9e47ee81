package registry

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// refreshingSource hands out the current token and fetches a new one once
// a fifth of its lifetime is left (at most a minute before it ends), so a
// call never leaves with a token that expires on the way. Expired or not,
// a token the registry refuses (401) is dropped by Invalidate.
type refreshingSource struct {
	fetch oauth2.TokenSource
	now   func() time.Time

	mu       sync.Mutex
	token    *oauth2.Token
	issued   time.Time
	lifetime time.Duration
}

// NewTokenSource returns a client-credentials token source for the
// registry: POST {authURL}/oidc/token with client_id, client_secret and
// resource (the registry's base address, RFC 8707) in the form.
func NewTokenSource(ctx context.Context, authURL, clientID, clientSecret, resource string, httpClient *http.Client) oauth2.TokenSource {
	cfg := clientcredentials.Config{
		ClientID: clientID, ClientSecret: clientSecret,
		TokenURL:       strings.TrimRight(authURL, "/") + "/oidc/token",
		EndpointParams: url.Values{"resource": {resource}},
		AuthStyle:      oauth2.AuthStyleInParams,
	}
	if httpClient != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, httpClient)
	}
	// cfg.Token fetches every time; cfg.TokenSource would cache with a
	// fixed 10 s margin, too little for a call that queues behind others.
	fetch := tokenFunc(func() (*oauth2.Token, error) { return cfg.Token(ctx) })
	return &refreshingSource{fetch: fetch, now: time.Now}
}

func (s *refreshingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token != nil && s.token.AccessToken != "" {
		margin := min(s.lifetime/5, time.Minute)
		if s.token.Expiry.IsZero() || now.Add(margin).Before(s.token.Expiry) {
			return s.token, nil
		}
	}
	t, err := s.fetch.Token()
	if err != nil {
		return nil, err
	}
	s.token, s.issued = t, now
	s.lifetime = t.Expiry.Sub(now)
	return t, nil
}

// Invalidate drops the cached token, so the next call fetches a new one.
func (s *refreshingSource) Invalidate(old *oauth2.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == old {
		s.token = nil
	}
}

type invalidator interface{ Invalidate(*oauth2.Token) }

type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }
