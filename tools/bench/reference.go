package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The reference server is the limit a service is measured against: the
// same GET on a table of the same shape, with net/http, pgx and
// encoding/json and nothing else (no auth, no middleware, no framework).
// It runs in its own process like a service does: the bench binary runs
// itself with ChildEnv set (see ChildMain).

// ReferenceSchema holds the reference tables, made from the parties
// service's own migrations so the shape cannot drift.
const ReferenceSchema = "bench_reference"

// referenceSelect is the parties service's GET query, word for word: the
// organization and its linked people as a JSON array.
const referenceSelect = `SELECT id, name, registration_number, organization_type, tax_registration_number,
	country, idp_id, created_at, created_by, updated_at, updated_by,
	COALESCE((
	SELECT json_agg(json_build_object('id', p.id, 'first_name', p.first_name, 'last_name', p.last_name,
		'date_of_birth', p.date_of_birth, 'relation_type', l.relation_type) ORDER BY l.created_at, p.id, l.relation_type)
	FROM person_organizations l JOIN people p ON p.id = l.person_id
	WHERE l.organization_id = o.id), '[]') AS associated_people
	FROM organizations o WHERE id = $1`

const referenceInsert = `INSERT INTO organizations (id, name, registration_number, organization_type, country, created_by, updated_by)
	VALUES ($1, $2, $3, $4, $5, $6, $6)
	RETURNING id, name, registration_number, organization_type, tax_registration_number,
	country, idp_id, created_at, created_by, updated_at, updated_by, '[]'::json`

type referenceOrganization struct {
	ID                    string          `json:"id"`
	Name                  string          `json:"name"`
	RegistrationNumber    string          `json:"registration_number"`
	OrganizationType      string          `json:"organization_type"`
	TaxRegistrationNumber *string         `json:"tax_registration_number"`
	Country               *string         `json:"country"`
	IdpID                 *string         `json:"idp_id"`
	CreatedAt             time.Time       `json:"created_at"`
	CreatedBy             string          `json:"created_by"`
	UpdatedAt             time.Time       `json:"updated_at"`
	UpdatedBy             string          `json:"updated_by"`
	AssociatedPeople      json.RawMessage `json:"associated_people"`
}

func (o *referenceOrganization) fields() []any {
	return []any{&o.ID, &o.Name, &o.RegistrationNumber, &o.OrganizationType, &o.TaxRegistrationNumber,
		&o.Country, &o.IdpID, &o.CreatedAt, &o.CreatedBy, &o.UpdatedAt, &o.UpdatedBy, &o.AssociatedPeople}
}

// createReferenceSchema makes the reference schema from the create part of
// every parties migration, in order.
func createReferenceSchema(ctx context.Context, databaseURL, repoRoot string) error {
	files, err := filepath.Glob(filepath.Join(repoRoot, "services", "parties", "migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("reference schema: no parties migrations under %s", repoRoot)
	}
	sort.Strings(files)
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	schema := pgx.Identifier{ReferenceSchema}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE; CREATE SCHEMA "+schema+"; SET search_path = "+schema); err != nil {
		return fmt.Errorf("reference schema: %w", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		up, _, _ := strings.Cut(string(raw), "---- create above / drop below ----")
		// A migration that builds indexes CONCURRENTLY runs outside a
		// transaction, as tern runs it: one statement at a time (several
		// in one Exec would be one implicit transaction). Such a file holds
		// plain statements, each ending a line with a semicolon.
		statements := []string{up}
		if strings.HasPrefix(up, "---- tern: disable-tx ----") {
			statements = strings.SplitAfter(up, ";\n")
		}
		for _, statement := range statements {
			if _, err := conn.Exec(ctx, statement); err != nil {
				return fmt.Errorf("reference schema: %s: %w", filepath.Base(f), err)
			}
		}
	}
	return nil
}

// seedReference inserts n organizations and returns their ids.
func seedReference(ctx context.Context, pool *pgxpool.Pool, n int) ([]string, error) {
	ids := make([]string, n)
	rows := make([][]any, n)
	now := time.Now()
	for i := range ids {
		ids[i] = newUUIDv7()
		rows[i] = []any{ids[i], fmt.Sprintf("Org %d", i), fmt.Sprintf("REG%d", i), "private", "no", now, "bench", now, "bench"}
	}
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"organizations"},
		[]string{"id", "name", "registration_number", "organization_type", "country", "created_at", "created_by", "updated_at", "updated_by"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return nil, fmt.Errorf("seed reference: %w", err)
	}
	_, err = pool.Exec(ctx, "ANALYZE organizations")
	return ids, err
}

// referencePool opens a pool on the reference schema sized like a
// service's (database.max-conns defaults to 20).
func referencePool(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 20
	cfg.ConnConfig.RuntimeParams["search_path"] = ReferenceSchema
	return pgxpool.NewWithConfig(ctx, cfg)
}

// serveReference is the minimal server.
func serveReference(ctx context.Context, ln net.Listener, databaseURL string) error {
	pool, err := referencePool(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /organizations/{id}", func(w http.ResponseWriter, r *http.Request) {
		var o referenceOrganization
		err := pool.QueryRow(r.Context(), referenceSelect, r.PathValue("id")).Scan(o.fields()...)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			http.Error(w, "not found", http.StatusNotFound)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			writeReferenceJSON(w, http.StatusOK, o)
		}
	})
	mux.HandleFunc("POST /organizations", func(w http.ResponseWriter, r *http.Request) {
		var in organizationInput
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var o referenceOrganization
		err := pool.QueryRow(r.Context(), referenceInsert, newUUIDv7(), in.Name, in.RegistrationNumber,
			in.OrganizationType, in.Country, "reference").Scan(o.fields()...)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Location", "/organizations/"+o.ID)
		writeReferenceJSON(w, http.StatusCreated, o)
	})
	return serveUntilDone(ctx, ln, mux)
}

func writeReferenceJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// serveProxy is httputil.ReverseProxy and nothing else, except the one
// setting without which it is not a fair limit: the default transport keeps
// only 2 idle connections per host, so 16 clients would open and close
// connections all the time. The gateway keeps 256, and so does this.
func serveProxy(ctx context.Context, ln net.Listener, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 256
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: transport}
	return serveUntilDone(ctx, ln, proxy)
}

func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// profilerMux is the children's private profiling port, like a service's
// metrics port.
func profilerMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return mux
}

// newUUIDv7 makes a time-ordered id, as the services do.
func newUUIDv7() string { return uuid.Must(uuid.NewV7()).String() }

// connectDatabase connects to the registry's database as its services do
// (pkg/store): with jit off. A seed's bulk statements over tables just
// copied are planned as millions of rows, and PostgreSQL compiled one for
// 12 of its 16 seconds on a loaded machine.
func (e *Env) connectDatabase(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(e.Stack.DatabaseURL)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["jit"] = "off"
	return pgx.ConnectConfig(ctx, cfg)
}
