// Open opens a service's connection pool inside the service's
// own schema, applies its embedded migrations, and classifies database
// errors so that "the database is down" reaches clients as a 503 and never
// as a 500 with SQL in it.

package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
	"github.com/jackc/tern/v2/migrate"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// Config of a service's database.
type Config struct {
	URL string
	// ReadURL, when set, is a read-only replica (a hot standby) that the
	// reads which may lag the primary use (Store.Reads): lists, finds and
	// the compliance report; the primary stands in while it cannot be
	// reached.
	ReadURL string
	// DirectURL, when set, reaches the primary without a connection pooler
	// in between, for what holds a session: migrations and the leaders'
	// session advisory locks. Set it when URL goes through a pooler in
	// transaction mode (PgBouncer, CloudNativePG's Pooler), which hands
	// a session's server connection to other clients between transactions.
	DirectURL        string
	Schema           string
	MaxConns         int
	MaxWrites        int // write transactions at once; 0: WriteSlots' default
	StatementTimeout time.Duration
	LockTimeout      time.Duration
	IdleInTxTimeout  time.Duration
	AcquireTimeout   time.Duration
	StartupWait      time.Duration
	// LeaderSilence is how long a replica leading a job (the relay, a
	// consumer, maintenance) may say nothing before PostgreSQL ends its
	// session and a standby takes over (pkg/leader).
	LeaderSilence time.Duration
}

// RegisterFlags adds the database.* flags (env DATABASE_URL, DATABASE_SCHEMA, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet, defaultSchema string) {
	fs.StringVar(&c.URL, "database.url", "", "PostgreSQL connection URL (required)")
	fs.StringVar(&c.ReadURL, "database.read-url", "", "PostgreSQL URL of a read-only replica for lists, finds and the compliance report, which may then lag the primary (see docs/operations.md); empty: they read the primary")
	fs.StringVar(&c.DirectURL, "database.direct-url", "", "PostgreSQL URL of the primary without a pooler in between, for migrations and session locks, when database.url goes through a pooler in transaction mode; empty: database.url")
	fs.StringVar(&c.Schema, "database.schema", defaultSchema, "schema this service owns; created and migrated at start")
	fs.IntVar(&c.MaxConns, "database.max-conns", 20, "maximum open connections")
	fs.IntVar(&c.MaxWrites, "database.max-writes", 0, "write transactions at once, the rest wait their turn in order (0: 2 × CPUs + 1, at most max-conns less a quarter)")
	// Each well below the request timeout (15s), so one slow or locked
	// thing fails fast with a 503 instead of holding connections that
	// unrelated requests need.
	fs.DurationVar(&c.StatementTimeout, "database.statement-timeout", 5*time.Second, "server-side limit for one statement")
	fs.DurationVar(&c.LockTimeout, "database.lock-timeout", 2*time.Second, "server-side limit for waiting on a row lock (then 503: the resource is busy)")
	fs.DurationVar(&c.IdleInTxTimeout, "database.idle-in-transaction-timeout", 30*time.Second, "server-side limit for a transaction left open without work")
	fs.DurationVar(&c.AcquireTimeout, "database.acquire-timeout", 2*time.Second, "how long a request waits for a free connection (then 503)")
	fs.DurationVar(&c.StartupWait, "database.startup-wait", time.Minute, "how long to wait for the database at start")
	fs.DurationVar(&c.LeaderSilence, "database.leader-silence", 10*time.Second, "how long the replica leading a job (the outbox relay, the events consumer, maintenance) may say nothing before PostgreSQL ends its session and a standby leads; bounds how long a lost leader is missed")
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open creates the pool. Every connection works inside cfg.Schema (via
// search_path), so SQL and migrations are written without schema names and
// each test can run in a schema of its own. Queries are traced, and the
// pool's statistics are exported as pgxpool_* metrics labelled by schema.
// With cfg.ReadURL it opens the replica's pool too, and with cfg.DirectURL
// a small pool of its own for sessions.
func Open(ctx context.Context, cfg Config) (*Pool, error) {
	if cfg.URL == "" {
		return nil, errors.New("postgres: database.url is required")
	}
	if !schemaName.MatchString(cfg.Schema) {
		return nil, fmt.Errorf("postgres: schema %q is not a plain lowercase identifier", cfg.Schema)
	}
	settings := sessionSettings(cfg)
	primary, err := openPool(ctx, "database.url", cfg.URL, cfg.MaxConns, settings)
	if err != nil {
		return nil, err
	}
	p := newPool(primary, cfg)
	p.settings = settings
	metrics.track(cfg.Schema, primary)
	if cfg.ReadURL != "" {
		// Reads need no write slots; a quarter of the primary's pool is
		// what they may hold there, the replica gets as many as the
		// primary has.
		replica, err := openPool(ctx, "database.read-url", cfg.ReadURL, cfg.MaxConns, readSettings(cfg))
		if err != nil {
			primary.Close()
			return nil, err
		}
		p.replica = newPool(replica, cfg)
	}
	if cfg.DirectURL != "" {
		// Sessions are few: a relay's and a consumer's leader, migrations.
		if p.sessions, err = openPool(ctx, "database.direct-url", cfg.DirectURL, sessionConns, settings); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// sessionConns bounds the pool of database.direct-url.
const sessionConns = 4

// sessionSettings are what every session on the primary runs with.
func sessionSettings(cfg Config) map[string]string {
	// JIT off: the registry's queries are short, and a page whose estimate
	// passes jit_above_cost (a compliance page's lateral plan lookups)
	// spent a second compiling per call, far more than running it.
	settings := map[string]string{"search_path": cfg.Schema, "jit": "off"}
	for param, d := range map[string]time.Duration{
		"statement_timeout":                   cfg.StatementTimeout,
		"lock_timeout":                        cfg.LockTimeout,
		"idle_in_transaction_session_timeout": cfg.IdleInTxTimeout,
	} {
		if d > 0 {
			settings[param] = fmt.Sprint(d.Milliseconds())
		}
	}
	if cfg.ReadURL != "" {
		// A commit waits until a synchronous standby shows it to its
		// readers, so a read on the replica after a write's answer sees
		// the write, and a cached find is never stored from a replica
		// that has not caught up with the write that made the entry
		// stale. Without a synchronous standby (synchronous_standby_names
		// empty) it waits for nothing.
		settings["synchronous_commit"] = "remote_apply"
	}
	return settings
}

// readSettings are the replica's sessions': the primary's but for commits,
// which a read-only session has none of.
func readSettings(cfg Config) map[string]string {
	settings := sessionSettings(cfg)
	delete(settings, "synchronous_commit")
	return settings
}

// openPool opens a pool on url (named by flag in errors) whose sessions
// run with settings.
func openPool(ctx context.Context, flag, url string, maxConns int, settings map[string]string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse %s: %w", flag, err)
	}
	if maxConns > 0 {
		pc.MaxConns = int32(maxConns)
	}
	maps.Copy(pc.ConnConfig.RuntimeParams, settings)
	// Parameters stay out of spans: they hold names and birth dates.
	// Without an exporter there is no tracer: its spans would go nowhere.
	if telemetry.TracingEnabled() {
		pc.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTrimSQLInSpanName())
	}
	pc.ConnConfig.ConnectTimeout = 5 * time.Second
	pc.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		// Timestamps leave the service in UTC whatever the host's zone.
		conn.TypeMap().RegisterType(&pgtype.Type{
			Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		encodeUUIDsAsBytes(conn.TypeMap())
		scanUUIDsAsBytes(conn.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: create pool (%s): %w", flag, err)
	}
	return pool, nil
}

// CheckSettings makes sure the sessions run with the settings the pool
// asked for. A connection pooler in transaction mode (PgBouncer) drops
// the startup parameters they are asked with: a service whose sessions
// ran without its schema on the search path would fail every query, and
// one without its timeouts would fail nothing but hang where it should
// answer 503. Give them to the role instead (ALTER ROLE ... SET) and the
// check passes.
func CheckSettings(ctx context.Context, pool *Pool) error {
	check := func(flag string, p *pgxpool.Pool, settings map[string]string) error {
		names := slices.Sorted(maps.Keys(settings))
		rows, err := p.Query(ctx, `SELECT name, setting FROM pg_settings WHERE name = ANY($1)`, names)
		if err != nil {
			return Classify(err, "read the session's settings ("+flag+")")
		}
		got := map[string]string{}
		for rows.Next() {
			var name, setting string
			if err := rows.Scan(&name, &setting); err != nil {
				return Classify(err, "read the session's settings ("+flag+")")
			}
			got[name] = setting
		}
		if err := rows.Err(); err != nil {
			return Classify(err, "read the session's settings ("+flag+")")
		}
		var wrong []string
		for _, name := range names {
			if got[name] != settings[name] && !(name == "search_path" && strings.Trim(got[name], `"`) == settings[name]) {
				wrong = append(wrong, fmt.Sprintf("%s is %q, not %q", name, got[name], settings[name]))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("postgres: sessions of %s do not run with the service's settings (%s): "+
				"a connection pooler in transaction mode drops them; set them on the role "+
				"(ALTER ROLE ... IN DATABASE ... SET ..., see docs/operations.md)", flag, strings.Join(wrong, "; "))
		}
		return nil
	}
	if err := check("database.url", pool.Pool, pool.settings); err != nil {
		return err
	}
	if pool.replica != nil {
		settings := maps.Clone(pool.settings)
		delete(settings, "synchronous_commit")
		if err := check("database.read-url", pool.replica.Pool, settings); err != nil {
			if apperr.Is(err, apperr.KindUnavailable) {
				return nil // the primary stands in; the check runs at the next start
			}
			return err
		}
	}
	return nil
}

// MigrationSet is one sequence of migrations with its own version table,
// so the tables every service gets from the kit (pkg/store) evolve apart
// from the service's own.
type MigrationSet struct {
	Files        fs.FS  // NNN_name.sql files at the root
	VersionTable string // within the schema
}

// Migrate creates the schema if needed and applies the embedded migrations
// (NNN_name.sql files, tern format) in order, each in its own transaction,
// recording the version in <schema>.schema_version. Replicas starting
// together take turns on an advisory lock.
func Migrate(ctx context.Context, pool *Pool, schema string, migrations fs.FS) error {
	return MigrateSets(ctx, pool, schema, MigrationSet{Files: migrations, VersionTable: "schema_version"})
}

// MigrateSets is Migrate for several sets, applied in order.
func MigrateSets(ctx context.Context, pool *Pool, schema string, sets ...MigrationSet) error {
	pooled, err := pool.Sessions().Acquire(ctx)
	if err != nil {
		return Classify(err, "acquire connection for migrations")
	}
	// The session is the migrations' own and ends with them: it runs
	// without a statement timeout, which must not go back to the pool
	// with it, and closing it releases the lock. The timeout is lifted
	// from the start, for the bookkeeping before any migration too (the
	// locks, the schema, tern's version table, which a busy server or a
	// lock held on it stretches past a request's bound), and again before
	// each migration (prepareMigration), since tern resets the session
	// after each.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the session ends either way
	if _, err := conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return Classify(err, "lift the statement timeout for migrations")
	}
	// CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent twin
	// (both may try to insert the name), so replicas take turns per schema.
	if err := lockForMigrations(ctx, conn, schema); err != nil {
		return err
	}
	// A schema made beforehand for the service's role (the least
	// privilege: the role owns its schema and may not create others) is
	// used as it is. CREATE SCHEMA IF NOT EXISTS would not do: PostgreSQL
	// checks the CREATE privilege on the database before it looks whether
	// the schema exists.
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return Classify(err, "look up schema "+schema)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("postgres: create schema %s: %w", schema, err)
		}
	}
	for _, set := range sets {
		m, err := migrate.NewMigrator(ctx, conn, schema+"."+set.VersionTable)
		if err != nil {
			return fmt.Errorf("postgres: migrator: %w", err)
		}
		if err := m.LoadMigrations(set.Files); err != nil {
			return fmt.Errorf("postgres: load migrations: %w", err)
		}
		var prepareErr error
		m.OnStart = func(_ int32, name, _, sql string) {
			if prepareErr == nil {
				prepareErr = prepareMigration(ctx, conn, sql)
				if prepareErr != nil {
					prepareErr = fmt.Errorf("postgres: prepare migration %s: %w", name, prepareErr)
				}
			}
		}
		if err := m.Migrate(ctx); err != nil {
			return fmt.Errorf("postgres: migrate schema %s (%s): %w", schema, set.VersionTable, err)
		}
		if prepareErr != nil {
			return prepareErr
		}
	}
	return nil
}

// ternLock is the advisory lock tern takes, database-wide, for the whole
// of a migration run (its lockNum).
const ternLock = int64(9628173550095224)

// lockForMigrations takes the schema's migration lock, then tern's, by
// trying them every 50 ms rather than waiting inside PostgreSQL: a
// session waiting in pg_advisory_lock holds a snapshot, and CREATE INDEX
// CONCURRENTLY in the holder's migration waits for every older snapshot
// to go, so the two would wait for each other until the deadlock detector
// cancelled one. Tern's own wait for its lock then finds it held by this
// session (advisory locks stack), so it never waits. A wait inside
// PostgreSQL would also end at the pool's statement timeout, where a
// migration may take minutes. Tern's lock is the whole database's, so
// every schema's migration queues for it (every test package's, in CI):
// at half a second between tries the lock stood free most of the time
// while its waiters slept, and the queue was the tests' longest wait. A
// try is a trivial query on the migrator's own connection.
func lockForMigrations(ctx context.Context, conn *pgx.Conn, schema string) error {
	for _, lock := range []struct {
		sql string
		arg any
	}{{"SELECT pg_try_advisory_lock(hashtext('migrate:' || $1))", schema}, {"SELECT pg_try_advisory_lock($1)", ternLock}} {
		for {
			var held bool
			if err := conn.QueryRow(ctx, lock.sql, lock.arg).Scan(&held); err != nil {
				return Classify(err, "lock schema for migrations")
			}
			if held {
				break
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return Classify(ctx.Err(), "lock schema for migrations")
			case <-t.C:
			}
		}
	}
	return nil
}

// outsideTx is tern's mark of a migration that runs statement by statement
// outside a transaction (CREATE INDEX CONCURRENTLY cannot run inside one).
var outsideTx = regexp.MustCompile(`(?m)^---- tern: disable-tx ----$`)

// prepareMigration readies the session for one migration. A migration
// has no statement timeout: an index built CONCURRENTLY on a large table
// takes minutes and blocks no request meanwhile, and the deploy's
// migration Job bounds the whole (tern resets the session after each
// migration, so the requests that later use the connection have their
// timeout again). Before one that runs outside a transaction, it drops
// the invalid indexes a build CONCURRENTLY leaves when it fails: the
// migration runs again from its start, and its CREATE INDEX CONCURRENTLY
// IF NOT EXISTS would otherwise take the broken index for a built one.
// Only migrations make indexes, one schema at a time under the migration
// lock, so an invalid index here is always such a leftover.
//
// Such a migration also runs without a lock timeout: CREATE INDEX
// CONCURRENTLY waits, through the lock manager, for every transaction in
// the database older than its own to end, whatever table it touches, so a
// bulk load elsewhere that runs longer than the pool's lock timeout (2 s)
// would cancel the build. Its waits block no request (it holds only SHARE
// UPDATE EXCLUSIVE), and the migration Job's deadline bounds them. A
// migration inside a transaction keeps the lock timeout: its DDL takes
// ACCESS EXCLUSIVE locks that every request would queue behind.
func prepareMigration(ctx context.Context, conn *pgx.Conn, sql string) error {
	if _, err := conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return err
	}
	if !outsideTx.MatchString(sql) {
		return nil
	}
	if _, err := conn.Exec(ctx, "SET lock_timeout = 0"); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'i' AND NOT i.indisvalid`)
	if err != nil {
		return err
	}
	invalid, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range invalid {
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("drop the invalid index %s a failed build left: %w", name, err)
		}
	}
	return nil
}

// OpenAndMigrate opens the pool and migrates, retrying until the database
// answers or cfg.StartupWait passes: in a cluster the database may come up
// after the service.
func OpenAndMigrate(ctx context.Context, cfg Config, migrations fs.FS, onRetry func(error)) (*Pool, error) {
	return OpenAndMigrateSets(ctx, cfg, onRetry, MigrationSet{Files: migrations, VersionTable: "schema_version"})
}

// OpenAndMigrateSets is OpenAndMigrate for several sets.
func OpenAndMigrateSets(ctx context.Context, cfg Config, onRetry func(error), sets ...MigrationSet) (*Pool, error) {
	pool, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(cfg.StartupWait)
	for {
		// The settings first: migrations run in the sessions they check.
		err = CheckSettings(ctx, pool)
		if err == nil {
			err = MigrateSets(ctx, pool, cfg.Schema, sets...)
		}
		if err == nil {
			return pool, nil
		}
		if !apperr.Is(err, apperr.KindUnavailable) || time.Now().After(deadline) {
			pool.Close()
			return nil, err
		}
		if onRetry != nil {
			onRetry(err)
		}
		select {
		case <-ctx.Done():
			pool.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// LogRetries is OpenAndMigrate's onRetry for a process's logger.
func LogRetries(logger log.Logger) func(error) {
	return func(err error) {
		level.Warn(logger).Log("msg", "database not reachable yet; retrying", "err", err)
	}
}

// SQLSTATE codes the stores act on.
const (
	UniqueViolation     = "23505"
	ForeignKeyViolation = "23503"
)

// Constraint returns the name of the violated constraint when err is the
// given SQLSTATE, so a store can map it to a domain error.
func Constraint(err error, code string) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == code {
		return pgErr.ConstraintName, true
	}
	return "", false
}

// Classify wraps a database error with the operation's name. Errors that
// mean the database cannot serve right now (connection refused or lost,
// timeouts, shutdown, too many connections) become apperr "unavailable",
// which clients see as a 503 with Retry-After; everything else stays an
// internal error whose text only reaches the log.
func Classify(err error, op string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err) // the client went away
	}
	var app *apperr.Error
	if errors.As(err, &app) {
		return err // classified already (no free connection, say)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "57014", // query_canceled (statement_timeout)
			pgErr.Code == "55P03",   // lock_not_available (lock_timeout): the row is busy
			pgErr.Code == "25P03",   // idle_in_transaction_session_timeout
			pgErr.Code[:2] == "08",  // connection exception
			pgErr.Code[:2] == "53",  // insufficient resources
			pgErr.Code[:3] == "57P", // admin shutdown, crash shutdown, cannot connect now
			// The transaction lost a deadlock or a serialization race and
			// was rolled back whole: the same write may simply be sent again.
			pgErr.Code == "40P01", pgErr.Code == "40001",
			// A partitioned table's partitions ahead ran out: the
			// maintenance task makes the next (and its alert fires), so the
			// write is retried, never stored elsewhere.
			pgErr.Code == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation"):
			return apperr.Unavailable("the database", fmt.Errorf("%s: %w", op, err))
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	// A connection lost mid-query (the server died, a proxy cut it) shows
	// as an unexpected EOF or a closed connection, not as a PgError.
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) || errors.As(err, &connErr) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || isConnClosed(err) {
		return apperr.Unavailable("the database", fmt.Errorf("%s: %w", op, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isConnClosed recognises pgx's error for a connection that an earlier
// failure closed (it has no exported sentinel).
func isConnClosed(err error) bool {
	return strings.Contains(err.Error(), "conn closed")
}

// InTx runs fn in a write transaction, committing when it returns nil.
func InTx(ctx context.Context, pool *Pool, op string, fn func(tx pgx.Tx) error) error {
	tx, err := pool.BeginWrite(ctx)
	if err != nil {
		return Classify(err, op+": begin")
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	if err := fn(tx); err != nil {
		// A step that returned a database error as it came (the outbox's
		// insert, say) still reaches the client as a 503 when the
		// database is down, never as a 500; classified errors pass as
		// they are.
		return Classify(err, op)
	}
	return Classify(tx.Commit(ctx), op+": commit")
}

// Ping is the readiness check of a pool.
func Ping(pool *Pool) func(context.Context) error {
	return func(ctx context.Context) error { return Classify(pool.Ping(ctx), "ping") }
}

// encodeUUIDsAsBytes makes pgx send a uuid.UUID parameter as its 16 bytes.
// uuid.UUID is a driver.Valuer, and pgx uses a Valuer's Value (the UUID
// formatted as text) before it would look at the [16]byte underneath: a
// string made and parsed again for every id in every query, 6% of the
// parties service's CPU under GET /organizations/{id}.
func encodeUUIDsAsBytes(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{func(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
		if id, ok := value.(uuid.UUID); ok {
			return &uuidBytesPlan{}, [16]byte(id), true
		}
		return nil, nil, false
	}}, m.TryWrapEncodePlanFuncs...)
}

type uuidBytesPlan struct{ next pgtype.EncodePlan }

func (p *uuidBytesPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidBytesPlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode([16]byte(value.(uuid.UUID)), buf)
}

// scanUUIDsAsBytes makes pgx copy a uuid column's 16 bytes into a
// uuid.UUID. uuid.UUID is an sql.Scanner, which pgx prefers to anything
// else it could do: it formats the bytes as text for Scan to parse again.
func scanUUIDsAsBytes(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
}

type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanUUIDBytes{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type scanUUIDBytes struct{}

func (scanUUIDBytes) Scan(src []byte, dst any) error {
	if src == nil {
		return nil // what uuid.UUID's Scan does with NULL: nothing
	}
	if len(src) != len(uuid.UUID{}) {
		return fmt.Errorf("postgres: a uuid of %d bytes", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}
