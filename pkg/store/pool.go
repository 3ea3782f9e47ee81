package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/sync/semaphore"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Pool is a service's connection pool with two guards that keep one hot
// spot from starving every other request: a connection is waited for at
// most AcquireTimeout (then 503, not a request hanging until its own
// deadline), and write transactions may hold at most all but a few of the
// connections, so reads always find one free even while writes pile up
// behind a locked row.
type Pool struct {
	*pgxpool.Pool
	acquireTimeout time.Duration
	writes         *semaphore.Weighted
	schema         string
	settings       map[string]string // what its sessions run with (CheckSettings)

	// replica is database.read-url's pool (nil without one), which Reads
	// prefers; replicaDownAt is when it last failed to give a connection.
	replica       *Pool
	replicaDownAt atomic.Int64
	// sessions is database.direct-url's pool (nil: the pool itself).
	sessions *pgxpool.Pool
}

// Sessions is the pool for work that holds a session (a session advisory
// lock, a migration): the primary without a pooler in between.
func (p *Pool) Sessions() *pgxpool.Pool {
	if p.sessions != nil {
		return p.sessions
	}
	return p.Pool
}

// Close closes the pool and the replica's and sessions' pools.
func (p *Pool) Close() {
	if p.replica != nil {
		p.replica.Close()
	}
	if p.sessions != nil {
		p.sessions.Close()
	}
	p.Pool.Close()
}

// replicaBackoff is how long reads go to the primary after the replica
// failed to give a connection, so a replica that is down costs one failed
// connect per backoff, not one per read.
const replicaBackoff = 5 * time.Second

// Reads is what a read that may lag the primary runs on: the replica
// (database.read-url) while it gives connections, else the primary.
func (p *Pool) Reads() Querier {
	if p.replica == nil {
		return p
	}
	return replicaReads{p}
}

// ReplicaReady is the readiness check of the replica (an optional one:
// the primary stands in for it).
func (p *Pool) ReplicaReady(ctx context.Context) error {
	if p.replica == nil {
		return nil
	}
	return Classify(p.replica.Ping(ctx), "ping the read replica")
}

// readsOnPrimary counts the reads the primary answered for a replica that
// could not be connected to (RegistryReadReplicaUnavailable): they cost the
// primary what the replica was there to take.
var readsOnPrimary = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "store_replica_reads_on_primary_total",
	Help: "Reads meant for the read replica (database.read-url) that the primary answered because the replica could not be connected to.",
}, []string{"schema"})

// replicaReads sends reads to the replica, and to the primary while the
// replica cannot be connected to. Only the connection is retried on the
// primary: a query that fails on the replica once it runs fails.
type replicaReads struct{ p *Pool }

func (r replicaReads) replica(ctx context.Context) (*pgxpool.Conn, bool) {
	if since := time.Now().UnixNano() - r.p.replicaDownAt.Load(); since < int64(replicaBackoff) {
		readsOnPrimary.WithLabelValues(r.p.schema).Inc()
		return nil, false
	}
	conn, err := r.p.replica.acquire(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.p.replicaDownAt.Store(time.Now().UnixNano())
		}
		readsOnPrimary.WithLabelValues(r.p.schema).Inc()
		return nil, false
	}
	return conn, true
}

func (r replicaReads) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	conn, ok := r.replica(ctx)
	if !ok {
		return r.p.Query(ctx, sql, args...)
	}
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		conn.Release()
		return nil, err
	}
	return &releasingRows{Rows: rows, release: conn.Release}, nil
}

func (r replicaReads) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	conn, ok := r.replica(ctx)
	if !ok {
		return r.p.QueryRow(ctx, sql, args...)
	}
	return releasingRow{row: conn.QueryRow(ctx, sql, args...), release: conn.Release}
}

func (r replicaReads) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	conn, ok := r.replica(ctx)
	if !ok {
		return r.p.Exec(ctx, sql, args...)
	}
	defer conn.Release()
	return conn.Exec(ctx, sql, args...)
}

func newPool(p *pgxpool.Pool, cfg Config) *Pool {
	timeout := cfg.AcquireTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Pool{Pool: p, acquireTimeout: timeout, schema: cfg.Schema,
		writes: semaphore.NewWeighted(WriteSlots(int(p.Config().MaxConns), cfg.MaxWrites, runtime.GOMAXPROCS(0)))}
}

// WriteSlots is how many write transactions may run at once: maxWrites
// when set, else 2 × cpus + 1, and never more than maxConns less a quarter
// (at least one), which stays free for reads.
//
// The default keeps the database's own queue short. A write transaction
// holds locks inside PostgreSQL (index pages, rows) while it runs; with
// many more of them than cores, a holder is often descheduled with its
// lock held and the others wait out its time slice, which makes the slow
// tail. Measured in make bench on two cores (POST /actions, 16 writers):
// 15 slots gave p99 4.2 × p50, 5 slots 2.6 ×, at the same rate. Writers
// beyond the slots wait in order (the semaphore is FIFO), at most
// database.acquire-timeout. The CPUs counted are this process's, which
// stand for the database's when they share a machine; set
// database.max-writes where the database has cores of its own (about
// twice its cores, plus one).
func WriteSlots(maxConns, maxWrites, cpus int) int64 {
	limit := maxConns - max(maxConns/4, 1)
	if maxConns <= 1 {
		limit = maxConns
	}
	want := maxWrites
	if want <= 0 {
		want = 2*cpus + 1
	}
	return int64(max(min(want, limit), 1))
}

var errNoConnection = errors.New("no database connection became free in time")

// NeverSent reports whether err is a failure that left the statement
// unsent: no connection became free in time, or pgx says nothing reached
// the server. A write that failed so certainly did not happen.
func NeverSent(err error) bool {
	return errors.Is(err, errNoConnection) || pgconn.SafeToRetry(err)
}

// acquire waits for a connection at most the acquire timeout.
func (p *Pool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, p.acquireTimeout)
	defer cancel()
	conn, err := p.Pool.Acquire(actx)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return nil, apperr.Unavailable("the database", fmt.Errorf("%w (waited %s)", errNoConnection, p.acquireTimeout))
	}
	return conn, err
}

// Query runs sql on a connection that goes back to the pool when the rows
// are read or closed.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	conn, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		conn.Release()
		return nil, err
	}
	return &releasingRows{Rows: rows, release: conn.Release}, nil
}

// QueryRow is Query for one row.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	conn, err := p.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	return releasingRow{row: conn.QueryRow(ctx, sql, args...), release: conn.Release}
}

// Exec runs sql on a connection of its own.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	conn, err := p.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer conn.Release()
	return conn.Exec(ctx, sql, args...)
}

// Begin starts a read transaction (or one that writes little, like a
// lock taken to read settled state).
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx starts a transaction with opts.
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	conn, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		conn.Release()
		return nil, err
	}
	return &releasingTx{Tx: tx, release: conn.Release}, nil
}

// BeginWrite starts a write transaction: it takes one of the write slots
// first (waiting at most the acquire timeout), so writes queued behind a
// lock never hold every connection. Its BEGIN waits to travel with its
// first statement (writeTx).
func (p *Pool) BeginWrite(ctx context.Context) (pgx.Tx, error) {
	actx, cancel := context.WithTimeout(ctx, p.acquireTimeout)
	err := p.writes.Acquire(actx, 1)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, apperr.Unavailable("the database", fmt.Errorf("no write slot became free in %s", p.acquireTimeout))
	}
	conn, err := p.acquire(ctx)
	if err != nil {
		p.writes.Release(1)
		return nil, err
	}
	return newWriteTx(conn, func() { conn.Release(); p.writes.Release(1) }), nil
}

type releasingRows struct {
	pgx.Rows
	release func()
	once    sync.Once
}

func (r *releasingRows) Next() bool { return nextOrClose(r.Rows, r.Close) }

// nextOrClose is Next for rows whose Close does more than pgx's: pgx's
// rows close themselves once read to the end, and so must they, for a
// caller may read to the end and never call Close.
func nextOrClose(rows pgx.Rows, close func()) bool {
	if rows.Next() {
		return true
	}
	close()
	return false
}

func (r *releasingRows) Close() {
	r.Rows.Close()
	r.once.Do(r.release)
}

type releasingRow struct {
	row     pgx.Row
	release func()
}

func (r releasingRow) Scan(dest ...any) error {
	defer r.release()
	return r.row.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// releasingTx gives its connection (and write slot) back when it ends.
type releasingTx struct {
	pgx.Tx
	release func()
	once    sync.Once
}

func (t *releasingTx) Commit(ctx context.Context) error {
	err := t.Tx.Commit(ctx)
	t.once.Do(t.release)
	return err
}

func (t *releasingTx) Rollback(ctx context.Context) error {
	err := t.Tx.Rollback(ctx)
	t.once.Do(t.release)
	return err
}

var (
	_ Querier = (*Pool)(nil)
	_ pgx.Tx  = (*releasingTx)(nil)
)
