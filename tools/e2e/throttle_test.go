package e2e

import (
	"io"
	"net"
	"net/http"
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
