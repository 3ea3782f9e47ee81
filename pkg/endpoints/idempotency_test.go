package endpoints_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

type thing struct {
	Name string `json:"name"`
}

// service is one create endpoint writing a row, behind the production
// encoder and the idempotency middleware; gate, when set, holds the
// request, after its write, until the test lets it go, and at gate the
// request signals atGate (when set).
type service struct {
	st     *store.Store
	keys   *endpoints.IdempotencyKeys
	url    string
	gate   chan struct{}
	atGate chan struct{}
	hook   func(ctx context.Context) // runs inside the request, before it returns
}

func newService(t *testing.T, lease time.Duration) *service {
	t.Helper()
	migrations := fstest.MapFS{"001_things.sql": {Data: []byte(`CREATE TABLE things (id uuid PRIMARY KEY, name text NOT NULL)`)}}
	pool, err := store.OpenAndMigrateSets(t.Context(), store.Config{URL: testkit.PostgresURL(t),
		Schema: testkit.NewDatabaseSchema(t), MaxConns: 10, StartupWait: time.Second}, nil, store.Migrations(migrations)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := &service{st: store.New(pool, nil)}
	s.keys = endpoints.NewIdempotencyKeys(s.st, lease, 10*time.Second)
	create := endpoints.New(func(ctx context.Context, in thing) (any, error) {
		id := store.NewID()
		err := s.st.Write(ctx, "create thing", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			_, err := tx.Exec(ctx, `INSERT INTO things (id, name) VALUES ($1, $2)`, id, in.Name)
			return nil, err
		})
		if s.atGate != nil {
			s.atGate <- struct{}{}
		}
		if s.gate != nil {
			<-s.gate
		}
		if s.hook != nil {
			s.hook(ctx)
		}
		return httpx.Created{Value: map[string]any{"id": id, "name": in.Name}, Location: "/things/" + id.String()}, err
	})
	r := httpx.NewRouter()
	r.Handle("POST", "/things", endpoints.Serve(create, httpx.Body[thing], endpoints.IdempotencyKey))
	r.Handle("POST", "/undeclared", endpoints.Serve(create, httpx.Body[thing]))
	h := httpx.Chain(s.keys.Handler(r), httpx.WithRequestInfo(false), withCaller)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// withCaller stands in for the token check: the X-Client header names the
// caller.
func withCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := auth.WithPrincipal(r.Context(), auth.Principal{Subject: r.Header.Get("X-Client")})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *service) post(t *testing.T, client, key, body string) testkit.Response {
	t.Helper()
	headers := []string{"X-Client", client}
	if key != "" {
		headers = append(headers, endpoints.IdempotencyKeyHeader, key)
	}
	return testkit.Client{BaseURL: s.url}.Do(t, "POST", "/things", "", body, headers...)
}

func (s *service) rows(t *testing.T) int {
	t.Helper()
	var n int
	if err := s.st.Pool.QueryRow(t.Context(), `SELECT count(*) FROM things`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUndeclaredRouteIgnoresTheKey: a route that does not declare
// endpoints.IdempotencyKey acts on every request, key or not, and says so
// in its route table.
func TestUndeclaredRouteIgnoresTheKey(t *testing.T) {
	s := newService(t, time.Minute)
	c := testkit.Client{BaseURL: s.url}
	for range 2 {
		r := testkit.Expect(t, c.Do(t, "POST", "/undeclared", "", `{"name":"x"}`, "X-Client", "a", endpoints.IdempotencyKeyHeader, "k"), 201)
		if r.Header.Get("Idempotent-Replayed") != "" {
			t.Error("an undeclared route replayed an answer")
		}
	}
	if n := s.rows(t); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}

func TestRouteTableCarriesTheDeclaration(t *testing.T) {
	r := httpx.NewRouter()
	r.Handle("PATCH", "/a", endpoints.Serve(endpoints.New(func(context.Context, thing) (any, error) { return nil, nil }), httpx.Body[thing], endpoints.IfMatch))
	r.Handle("GET", "/a", endpoints.Serve(endpoints.New(func(context.Context, thing) (any, error) { return nil, nil }), httpx.Body[thing]))
	routes := r.Routes()
	if len(routes) != 2 || len(routes[0].Rules) != 1 || routes[0].Rules[0] != "If-Match" || len(routes[1].Rules) != 0 {
		t.Errorf("routes = %+v", routes)
	}
}

func TestReplayAndMismatch(t *testing.T) {
	s := newService(t, time.Minute)
	first := testkit.Expect(t, s.post(t, "a", "k1", `{"name":"x"}`), 201)
	again := testkit.Expect(t, s.post(t, "a", "k1", `{ "name" : "x" }`), 201)
	if string(again.Raw) != string(first.Raw) || again.Header.Get("Location") != first.Header.Get("Location") ||
		again.Header.Get("ETag") != first.Header.Get("ETag") || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay differs:\n%s %v\n%s %v", first.Raw, first.Header, again.Raw, again.Header)
	}
	r := testkit.Expect(t, s.post(t, "a", "k1", `{"name":"y"}`), 422)
	if f := r.Fields(); len(f) != 1 || f[0] != endpoints.IdempotencyKeyHeader {
		t.Errorf("fields = %v", f)
	}
	testkit.Expect(t, s.post(t, "b", "k1", `{"name":"x"}`), 201) // another client's key space
	testkit.Expect(t, s.post(t, "a", "", `{"name":"x"}`), 201)   // no key: no protection
	if n := s.rows(t); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
	for _, bad := range []string{"has space", strings.Repeat("k", 256), "é"} {
		testkit.Expect(t, s.post(t, "a", bad, `{"name":"x"}`), 400)
	}
}

func TestKeyInFlightIsAConflict(t *testing.T) {
	s := newService(t, time.Minute)
	s.gate = make(chan struct{})
	release := sync.OnceFunc(func() { close(s.gate) })
	t.Cleanup(release) // a failing test must not leave the request blocked
	done := make(chan testkit.Response, 1)
	go func() { done <- s.post(t, "a", "slow", `{"name":"x"}`) }()
	// Wait until the first request holds the key (it then blocks on gate).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := s.st.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_keys WHERE key = 'slow'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first request never claimed its key")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := testkit.Expect(t, s.post(t, "a", "slow", `{"name":"x"}`), 409)
	if r.Header.Get("Retry-After") == "" {
		t.Error("409 in flight without Retry-After")
	}
	release()
	testkit.Expect(t, <-done, 201)
	testkit.Expect(t, s.post(t, "a", "slow", `{"name":"x"}`), 201)
	if n := s.rows(t); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}

// Many clients retrying with one key at once: exactly one execution.
func TestConcurrentRetriesExecuteOnce(t *testing.T) {
	s := newService(t, time.Minute)
	var wg sync.WaitGroup
	statuses := make(chan int, 20)
	for range 20 {
		wg.Go(func() { statuses <- s.post(t, "a", "race", `{"name":"x"}`).Status })
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 201 && st != 409 {
			t.Errorf("status %d", st)
		}
	}
	if n := s.rows(t); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}

// The answer's record commits with the write or not at all: a request
// that loses its key's lease to another before it commits writes nothing.
func TestRecordAndWriteCommitTogether(t *testing.T) {
	s := newService(t, time.Minute)
	s.hook = func(ctx context.Context) {
		// Another request took the key (as after an expired lease).
		if _, err := s.st.Pool.Exec(context.Background(), `UPDATE idempotency_keys SET token = $1`, uuid.New()); err != nil {
			t.Error(err)
		}
	}
	testkit.Expect(t, s.post(t, "a", "stolen", `{"name":"x"}`), 503)
	if n := s.rows(t); n != 0 {
		t.Errorf("%d rows written by a request whose record could not commit", n)
	}
}

// A failed request releases its key; a crashed one's claim expires.
func TestFailuresFreeTheKey(t *testing.T) {
	s := newService(t, time.Minute)
	testkit.Expect(t, s.post(t, "a", "k", `{"name":`), 400)
	testkit.Expect(t, s.post(t, "a", "k", `{"name":"x"}`), 201)
	if _, err := s.st.Pool.Exec(t.Context(), `INSERT INTO idempotency_keys (client, key, token, state, lease_until)
		VALUES ('a', 'crashed', gen_random_uuid(), 'in_flight', now() - interval '1 second')`); err != nil {
		t.Fatal(err)
	}
	testkit.Expect(t, s.post(t, "a", "crashed", `{"name":"x"}`), 201)
	if n := s.sweep(t); n != 0 {
		t.Errorf("sweep removed %d fresh records", n)
	}
}

// sweep runs the sweeper's task to its end and says how many records it
// removed.
func (s *service) sweep(t *testing.T) int64 {
	t.Helper()
	conn, err := s.st.Pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	n, err := s.keys.SweepTask().Drain(t.Context(), conn.Conn())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The sweeper removes the records past retention, in batches, and only
// those: a done record older than the retention, a claim whose lease
// ended longer ago than it; not a recent record, nor an old claim whose
// lease still runs.
func TestSweepRemovesOnlyRecordsPastRetention(t *testing.T) {
	s := newService(t, time.Minute)
	past := fmt.Sprintf("%d seconds", int(endpoints.IdempotencyRetention.Seconds())+60)
	if _, err := s.st.Pool.Exec(t.Context(), `INSERT INTO idempotency_keys (client, key, token, state, lease_until, created_at)
		SELECT 'old', 'done-' || n, gen_random_uuid(), 'done', now() - $1::interval, now() - $1::interval FROM generate_series(1, 2500) n`, past); err != nil {
		t.Fatal(err)
	}
	for _, row := range []struct{ key, state, lease, created string }{
		{"claim-ended", "in_flight", "-" + past, "-" + past},
		{"claim-running", "in_flight", "1 minute", "-" + past},
		{"done-recent", "done", "-1 hour", "-1 hour"},
		{"claim-recent", "in_flight", "-1 hour", "-1 hour"},
	} {
		if _, err := s.st.Pool.Exec(t.Context(), `INSERT INTO idempotency_keys (client, key, token, state, lease_until, created_at)
			VALUES ('mixed', $1, gen_random_uuid(), $2, now() + $3::interval, now() + $4::interval)`, row.key, row.state, row.lease, row.created); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.sweep(t); n != 2501 {
		t.Errorf("the sweep removed %d records, want the 2,500 old done ones and the ended claim", n)
	}
	rows, err := s.st.Pool.Query(t.Context(), `SELECT key FROM idempotency_keys ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"claim-recent", "claim-running", "done-recent"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
}

// A caller that hangs up once its request has run does not undo it: the
// answer is recorded and committed all the same, and the retry with the
// key gets it (a cancelled commit would instead hold the key in flight
// until its lease ends, a 409 for every retry until then).
func TestHangUpAfterTheWorkKeepsTheAnswer(t *testing.T) {
	s := newService(t, time.Minute)
	s.gate, s.atGate = make(chan struct{}), make(chan struct{}, 1)
	ctx, hangUp := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/things", strings.NewReader(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Client", "a")
	req.Header.Set(endpoints.IdempotencyKeyHeader, "hang-up")
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	state := func() string {
		var st string
		_ = s.st.Pool.QueryRow(t.Context(), `SELECT state FROM idempotency_keys WHERE key = 'hang-up'`).Scan(&st)
		return st
	}
	// Hang up once the request has run its write (a hang-up before that
	// fails the request, and rightly frees the key).
	select {
	case <-s.atGate:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached its gate")
	}
	if st := state(); st != "in_flight" {
		t.Fatalf("key %q while the request runs, want in_flight", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	hangUp()
	<-gone
	time.Sleep(200 * time.Millisecond) // the server notices the closed connection
	close(s.gate)
	for state() != "done" && time.Now().Before(deadline.Add(5*time.Second)) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := state(); st != "done" {
		t.Fatalf("key %q after the hang-up, want done", st)
	}
	again := testkit.Expect(t, s.post(t, "a", "hang-up", `{"name":"x"}`), 201)
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Error("the retry ran the request again")
	}
	if n := s.rows(t); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}
