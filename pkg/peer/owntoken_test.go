package peer

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// issuerStub hands out numbered tokens living 15 minutes, or fails while
// down.
type issuerStub struct {
	mu      sync.Mutex
	now     time.Time
	down    bool
	fetches int
}

func (s *issuerStub) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *issuerStub) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

func (s *issuerStub) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *issuerStub) fetch() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches++
	if s.down {
		return nil, errors.New("connection refused")
	}
	return &oauth2.Token{AccessToken: fmt.Sprintf("t%d", s.fetches), Expiry: s.now.Add(15 * time.Minute)}, nil
}

// The service's own token is renewed halfway through its life, and an
// outage of the issuer at that moment costs nothing until the token held
// expires: no peer call fails for want of a token while one is valid.
func TestOwnTokenOutlivesAnIssuerOutage(t *testing.T) {
	stub := &issuerStub{now: time.Unix(1_700_000_000, 0)}
	own := newOwnToken(stub.fetch)
	own.now = stub.clock
	token := func(want string, wantFetches int) {
		t.Helper()
		got, err := own.Token()
		switch {
		case want == "" && err == nil:
			t.Fatalf("token %q, want an error (fetches %d)", got.AccessToken, stub.fetches)
		case want != "" && (err != nil || got.AccessToken != want):
			t.Fatalf("token %v %v, want %q", got, err, want)
		case stub.fetches != wantFetches:
			t.Fatalf("%d fetches, want %d", stub.fetches, wantFetches)
		}
	}

	token("t1", 1)
	stub.advance(7 * time.Minute)
	token("t1", 1) // before half its life: held
	stub.advance(time.Minute)
	token("t2", 2) // past half its life: renewed

	stub.setDown(true)
	stub.advance(8 * time.Minute) // t2 is due, the issuer down
	token("t2", 3)                // tried, failed: the held token goes on
	token("t2", 3)                // not tried again at once
	stub.advance(renewRetry)
	token("t2", 4) // tried again after renewRetry
	stub.setDown(false)
	stub.advance(renewRetry)
	token("t5", 5) // the issuer back: renewed

	stub.setDown(true)
	stub.advance(15*time.Minute - expiryMargin) // t5 no longer sendable
	token("", 6)                                // nothing valid: the call fails with the fetch
	token("", 7)                                // and the next one asks again
	stub.setDown(false)
	token("t8", 8)
}

// A service that never had a token fails its calls while the issuer is
// down, and gets one as soon as it is back.
func TestOwnTokenFirstFetch(t *testing.T) {
	stub := &issuerStub{now: time.Unix(1_700_000_000, 0), down: true}
	own := newOwnToken(stub.fetch)
	own.now = stub.clock
	if _, err := own.Token(); err == nil {
		t.Fatal("a token with the issuer down and none held")
	}
	stub.setDown(false)
	if got, err := own.Token(); err != nil || got.AccessToken != "t2" {
		t.Fatalf("token %v %v, want t2", got, err)
	}
}

// While one call renews the token (the issuer slow), every other call goes
// on with the token held instead of waiting for it.
func TestOwnTokenRenewalHoldsUpNoOtherCall(t *testing.T) {
	stub := &issuerStub{now: time.Unix(1_700_000_000, 0)}
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	slow := false
	own := newOwnToken(func() (*oauth2.Token, error) {
		if slow {
			entered <- struct{}{}
			<-release
		}
		return stub.fetch()
	})
	own.now = stub.clock
	if _, err := own.Token(); err != nil {
		t.Fatal(err)
	}
	slow = true
	stub.advance(8 * time.Minute)
	renewed := make(chan *oauth2.Token)
	go func() {
		got, _ := own.Token()
		renewed <- got
	}()
	<-entered // the renewal is under way

	other := make(chan *oauth2.Token)
	go func() {
		got, _ := own.Token()
		other <- got
	}()
	select {
	case got := <-other:
		if got == nil || got.AccessToken != "t1" {
			t.Errorf("another call during the renewal: %v, want the held t1", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another call waited for the renewal")
	}
	close(release)
	if got := <-renewed; got == nil || got.AccessToken != "t2" {
		t.Errorf("the renewing call: %v, want t2", got)
	}
}
