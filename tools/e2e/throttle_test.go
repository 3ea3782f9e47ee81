package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// The real identity provider, with its default throttle: an address that
// keeps sending wrong secrets for a client is answered 429 with
// Retry-After for that client, while the client itself, from its own
// address, keeps getting tokens, and so does another client from the
// attacking address (a neighbour behind the same egress).
func TestTokenEndpointThrottlesGuesses(t *testing.T) {
	t.Parallel() // guesses come from 127.0.0.2, which no other test calls from
	// Another address of the loopback network: another machine, as the
	// identity provider sees it (the other tests come from 127.0.0.1).
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	transport := &http.Transport{DialContext: dialer.DialContext}
	defer transport.CloseIdleConnections()
	attacker := &http.Client{Transport: transport}

	const guesses = 200
	counts := map[int]int{}
	for i := range guesses {
		form := clientForm(creds.ClientID, "guess-"+strconv.Itoa(i))
		resp, err := attacker.PostForm(stack.AuthURL+"/oidc/token", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		counts[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
				t.Fatalf("429 with Retry-After %q", resp.Header.Get("Retry-After"))
			}
		}
		if i%50 == 49 {
			token(t, creds.ClientID, creds.ClientSecret) // the real client, meanwhile
		}
	}
	t.Logf("%d wrong secrets from 127.0.0.2: %v", guesses, counts)
	// Ten failures a minute per client and address: everything after the
	// first ten is refused, but for a guess let through by a refill if the
	// loop is slow.
	if counts[http.StatusUnauthorized] < 10 || counts[http.StatusTooManyRequests] < guesses/2 || counts[http.StatusOK] != 0 {
		t.Fatalf("%d wrong secrets from one address: %v, want 10 × 401, then 429", guesses, counts)
	}
	resp, err := attacker.PostForm(stack.AuthURL+"/oidc/token", clientForm(creds.ClientID, "one-more"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), `"error":"slow_down"`) {
		t.Errorf("%d %s, want 429 slow_down", resp.StatusCode, body)
	}
	// More wrong secrets from the address, for other client ids, past the
	// address's own limit (30 a minute): from now on its requests are
	// slowed, never refused.
	for i := range 30 {
		resp, err := attacker.PostForm(stack.AuthURL+"/oidc/token", clientForm("made-up-"+strconv.Itoa(i%3), "guess"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	neighbour, err := attacker.PostForm(stack.AuthURL+"/oidc/token", clientForm(creds.OtherClientID, creds.OtherClientSecret))
	if err != nil {
		t.Fatal(err)
	}
	neighbour.Body.Close()
	if neighbour.StatusCode != http.StatusOK {
		t.Errorf("another client's right secret from the same address: %d, want 200", neighbour.StatusCode)
	}
}

// Behind an ingress every caller reaches the identity provider from the
// ingress's address; make run's identity provider trusts X-Forwarded-For
// from loopback, as a production one trusts its ingress. Here a reverse
// proxy on loopback stands for the ingress and reports each caller's own
// loopback address: an attacker's wrong secrets for a client id from one
// address are refused with 429 after its budget, while the client's right
// secret from another address through the same proxy is answered, and its
// token works at the gateway.
func TestTokenEndpointThrottlesTheTrueSourceBehindAProxy(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(stack.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	ingress := httptest.NewServer(httputil.NewSingleHostReverseProxy(target)) // appends the caller to X-Forwarded-For
	defer ingress.Close()
	caller := func(ip net.IP) *http.Client {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
		transport := &http.Transport{DialContext: dialer.DialContext}
		t.Cleanup(transport.CloseIdleConnections)
		return &http.Client{Transport: transport}
	}
	attacker, client := caller(net.IPv4(127, 0, 0, 3)), caller(net.IPv4(127, 0, 0, 4))
	post := func(c *http.Client, secret string) *http.Response {
		t.Helper()
		resp, err := c.PostForm(ingress.URL+"/oidc/token", clientForm(creds.OtherClientID, secret))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	const guesses = 40
	counts := map[int]int{}
	for i := range guesses {
		resp := post(attacker, "guess-"+strconv.Itoa(i))
		resp.Body.Close()
		counts[resp.StatusCode]++
	}
	t.Logf("%d wrong secrets from 127.0.0.3 through the proxy: %v", guesses, counts)
	if counts[http.StatusUnauthorized] < 10 || counts[http.StatusTooManyRequests] < guesses/2 || counts[http.StatusOK] != 0 {
		t.Fatalf("%d wrong secrets from one address through the proxy: %v, want 10 × 401, then 429", guesses, counts)
	}
	resp := post(client, creds.OtherClientSecret)
	defer resp.Body.Close()
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the right secret from 127.0.0.4 through the same proxy: %d (%v), want 200", resp.StatusCode, err)
	}
	req, _ := http.NewRequest(http.MethodGet, stack.RegistryURL+"/organizations?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+answer.AccessToken)
	call, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	call.Body.Close()
	if call.StatusCode != http.StatusOK {
		t.Errorf("a call with the token got through the proxy: %d, want 200", call.StatusCode)
	}
	again := post(attacker, "guess-again")
	again.Body.Close()
	if again.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the attacker once more: %d, want 429", again.StatusCode)
	}
}
