package servicetest

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/testkit"
)

// Request is one call of a suite.
type Request struct {
	Method, Path string
	Body         any
	Headers      []string // name, value pairs
}

// Outage describes what a service must do while its database is gone.
type Outage struct {
	Before func(s *Service) // acknowledged writes before the outage
	// During are calls that need the database: each must answer 503 with
	// Retry-After (read-write token), never a 500 or a hang.
	During []Request
	After  func(s *Service) // after recovery: the acknowledged writes are there, nothing half-written is
}

// DatabaseDown runs spec on a private PostgreSQL server, stops the server,
// checks every call of o.During and /readyz answer 503 with Retry-After,
// restarts the server on the same data and checks the service recovers by
// itself (o.After).
func DatabaseDown(t *testing.T, spec servicekit.Spec, o Outage) {
	t.Helper()
	dir := testkit.ServerDir(t)
	pg, err := devinfra.StartPostgres(t.Context(), devinfra.PostgresOptions{DataDir: filepath.Join(dir, "pg"), Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	issuer := testkit.NewIssuer(t, Audience)
	cfg := Config(t, spec, issuer)
	cfg.Database.URL, cfg.Database.MaxConns = pg.URL, 4
	s := StartWith(t, spec, cfg, issuer)
	if o.Before != nil {
		o.Before(s)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, call := range o.During {
		r := s.Call(503, call.Method, call.Path, s.RW, call.Body, call.Headers...)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", call.Method, call.Path)
		}
	}
	probe := testkit.Client{BaseURL: s.Client.BaseURL}.Do(t, "GET", "/readyz", "", nil)
	if probe.Status != 503 || probe.Header.Get("Retry-After") == "" {
		t.Errorf("readyz = %d (Retry-After %q) while the database is down", probe.Status, probe.Header.Get("Retry-After"))
	}
	pg, err = devinfra.StartPostgres(t.Context(), devinfra.PostgresOptions{DataDir: filepath.Join(dir, "pg"), Port: pg.Port, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.After != nil {
		o.After(s)
	}
}

// Pausable is a service on a private PostgreSQL server that the test
// pauses (SIGSTOP: connections stay open, nothing answers, as behind a
// network partition or a stalled disk) and resumes. Its request timeout is
// 2 s, and Bounded is a client that gives up 5 s after that: an answer
// later than that waited for the paused database.
type Pausable struct {
	*Service
	Bounded testkit.Client
	pg      *devinfra.Postgres
}

// StartPausable starts spec on a private PostgreSQL server of its own,
// with connections open in its pool.
func StartPausable(t *testing.T, spec servicekit.Spec) *Pausable {
	t.Helper()
	dir := testkit.ServerDir(t)
	pg, err := devinfra.StartPostgres(t.Context(), devinfra.PostgresOptions{DataDir: filepath.Join(dir, "pg"), Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Signal(syscall.SIGCONT); _ = pg.Stop() })
	issuer := testkit.NewIssuer(t, Audience)
	cfg := Config(t, spec, issuer)
	cfg.Database.URL, cfg.Database.MaxConns = pg.URL, 4
	cfg.Timeout = 2 * time.Second
	s := StartWith(t, spec, cfg, issuer)
	// Open connections first, so that calls find them in the pool and
	// wait on the paused server rather than on connecting to it.
	if r := (testkit.Client{BaseURL: s.Client.BaseURL}).Do(t, "GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz = %d before the pause", r.Status)
	}
	bounded := *s.Client.HTTP
	bounded.Timeout = cfg.Timeout + 5*time.Second
	return &Pausable{Service: s, Bounded: testkit.Client{BaseURL: s.Client.BaseURL, HTTP: &bounded}, pg: pg}
}

// Pause stops the database server and every backend. It may be called
// from any goroutine (a request body's reader, say).
func (p *Pausable) Pause(t testing.TB) {
	if err := p.pg.Signal(syscall.SIGSTOP); err != nil {
		t.Error(err)
	}
}

// Resume lets them run again.
func (p *Pausable) Resume(t testing.TB) {
	if err := p.pg.Signal(syscall.SIGCONT); err != nil {
		t.Error(err)
	}
}

// DatabasePaused pauses spec's database (see Pausable). Each call must
// answer 503 with Retry-After within the request timeout and a margin,
// never wait for the database to come back: the server-side statement
// timeout cannot fire in a server that does not run, so every database
// step needs a bound of its own, also in a request that may run longer
// than the request timeout (an upload). After the pause the service must
// serve again by itself (after, if set).
func DatabasePaused(t *testing.T, spec servicekit.Spec, during []Request, after func(s *Service)) {
	t.Helper()
	p := StartPausable(t, spec)
	p.Pause(t)
	for _, call := range during {
		r := testkit.Expect(t, p.Bounded.Do(t, call.Method, call.Path, p.RW, call.Body, call.Headers...), 503)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", call.Method, call.Path)
		}
	}
	p.Resume(t)
	if after != nil {
		after(p.Service)
	}
}
