package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"0", 0}, {"-1", 0}, {"soon", 0},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		if got := retryAfter(h); got != tc.want {
			t.Errorf("Retry-After %q: %v, want %v", tc.header, got, tc.want)
		}
	}
}

// The token is fetched again once a fifth of its lifetime is left, not
// when it has run out.
func TestTokenRefreshesBeforeItExpires(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fetched := 0
	s := &refreshingSource{now: func() time.Time { return now }, fetch: tokenFunc(func() (*oauth2.Token, error) {
		fetched++
		return &oauth2.Token{AccessToken: "t", Expiry: now.Add(100 * time.Second)}, nil
	})}
	for _, tc := range []struct {
		after time.Duration
		want  int
	}{{0, 1}, {50 * time.Second, 1}, {79 * time.Second, 1}, {81 * time.Second, 2}, {82 * time.Second, 2}} {
		now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(tc.after)
		if _, err := s.Token(); err != nil {
			t.Fatal(err)
		}
		if fetched != tc.want {
			t.Errorf("after %v: %d fetches, want %d", tc.after, fetched, tc.want)
		}
	}
}

type staticTokens struct{}

func (staticTokens) Token() (*oauth2.Token, error) { return &oauth2.Token{AccessToken: "x"}, nil }

// A 503 and a 429 are retried after Retry-After with the same
// Idempotency-Key; a 422 is not retried and comes back as a Problem.
func TestRetriesKeepTheIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	answers := []int{503, 429, 201}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		status := answers[min(len(keys)-1, len(answers)-1)]
		if status != 201 {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"type":"urn:asset-registry:problem:unavailable","title":"x","status":` + strconv.Itoa(status) + `,"instance":"/organizations","request_id":"r1"}`))
			return
		}
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"id":"o1","name":"n"}`))
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, Tokens: staticTokens{}, MaxWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.CreateOrganization(context.Background(), OrganizationInput{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != "o1" || len(keys) != 3 || keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] {
		t.Errorf("id %q, keys %q: want three attempts with one key", o.ID, keys)
	}
}

func TestProblemIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(409)
		_, _ = w.Write([]byte(`{"type":"urn:asset-registry:problem:duplicate","title":"Duplicate","status":409,"instance":"/people","request_id":"req-9","existing_id":"p-1","errors":[{"field":"first_name","message":"taken"}]}`))
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL, Tokens: staticTokens{}})
	_, err := c.CreatePerson(context.Background(), PersonInput{FirstName: "a", LastName: "b"})
	var p *Problem
	if !errors.As(err, &p) {
		t.Fatalf("%v is no Problem", err)
	}
	if p.ExistingID != "p-1" || p.RequestID != "req-9" || p.Kind() != "duplicate" || len(p.Errors) != 1 || !IsConflict(err) {
		t.Errorf("problem %+v", p)
	}
}

// A download streams: a file larger than any answer the client reads into
// memory (64 MiB) arrives whole, after a 503 that is retried; the bytes go
// to the writer as they come.
func TestDownloadStreams(t *testing.T) {
	const size = 80 << 20
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts++
		if attempts == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(503)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		chunk := make([]byte, 1<<20)
		for range size >> 20 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, Tokens: staticTokens{}, MaxWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var w countingWriter
	n, err := c.DownloadDocument(context.Background(), "d1", &w)
	if err != nil || n != size || w.n != size || attempts != 2 {
		t.Errorf("downloaded %d (writer %d) in %d attempts, err %v; want %d in 2", n, w.n, attempts, err, size)
	}
	if w.maxWrite > 1<<20 {
		t.Errorf("a write of %d bytes: the answer was held, not streamed", w.maxWrite)
	}
}

type countingWriter struct{ n, maxWrite int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.maxWrite = max(w.maxWrite, int64(len(p)))
	return len(p), nil
}

// A batch answers one result per item, in order; an item's problem is an
// error of its own carrying the batch's request id; an answer that does
// not match the items is an error.
func TestBatchResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		items   int
		answer  string
		wantErr bool
		check   func(t *testing.T, rs []BatchResult)
	}{
		{"created and refused", 2, `[{"status":201,"id":"a1"},{"status":422,"problem":{"type":"urn:asset-registry:problem:validation-failed","title":"x","status":422,"errors":[{"field":"reference","message":"too long"}]}}]`, false,
			func(t *testing.T, rs []BatchResult) {
				var p *Problem
				if rs[0].ID != "a1" || rs[0].Err() != nil || !errors.As(rs[1].Err(), &p) || p.Errors[0].Field != "reference" || p.RequestID != "req-b" {
					t.Errorf("results %+v", rs)
				}
			}},
		{"fewer results than items", 2, `[{"status":201,"id":"a1"}]`, true, nil},
		{"no items", 0, `[]`, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var key string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				key = r.Header.Get("Idempotency-Key")
				w.Header().Set("X-Request-Id", "req-b")
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			c, _ := New(Config{URL: srv.URL, Tokens: staticTokens{}})
			rs, err := c.CreateActions(context.Background(), make([]ActionInput, tc.items), IdempotencyKey("batch-1"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil {
				if key != "batch-1" {
					t.Errorf("Idempotency-Key %q, want batch-1", key)
				}
				tc.check(t, rs)
			}
		})
	}
}
