// Package leader runs work in one replica at a time: the outbox relay, the
// events consumer, the maintenance of a schema. The replica that leads
// holds a session advisory lock in the schema, on a connection of its own;
// the others stand by, each asking for the lock four times a second on one
// connection it keeps, so a standby costs PostgreSQL an idle backend and a
// statement that answers at once, not a connection opened and closed every
// poll.
//
// A leader that is lost is replaced within its Silence (10 s by default),
// whatever became of it. Its session runs with PostgreSQL's own limits on
// silence (idle_session_timeout, idle_in_transaction_session_timeout and
// tcp_user_timeout all set to Silence), and the leader says something at
// least every third of it (its own statements, or a heartbeat when it has
// none). So PostgreSQL itself ends the session of a leader that stopped
// talking (a process frozen by SIGSTOP or a debugger, a node lost with its
// network, a process stuck without CPU), which releases the lock, and a
// standby takes it at its next poll. TCP keepalives would not do: the
// kernel of a frozen process still answers them, and they notice a lost
// node only after minutes. A lease table would need a write
// per renewal and a fencing check per step, where the session is already
// the lease and PostgreSQL already ends it.
//
// A frozen leader that wakes finds its session gone: its next statement
// fails, it gives the lead up and stands by. Until then it may finish the
// step it was in (a batch of the consumer or of a maintenance task), so
// every leader's steps must be safe to repeat; they are (batches are
// idempotent). A step whose effect leaves PostgreSQL, where the session
// cannot guard it, must be fenced where it lands: the outbox relay's
// publishes carry its epoch and JetStream refuses those of a leader that
// another has replaced (pkg/outbox, fence.go).
package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/job"
)

// DefaultSilence is how long a leader may say nothing before PostgreSQL
// ends its session and a standby takes over.
const DefaultSilence = 10 * time.Second

var leading = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Name: "registry_leader",
	Help: "1 on the replica that holds the lock (relay, consumer, maintenance) of the schema.",
}, []string{"schema", "lock"})

// Lock is one kind of work that one replica of a schema does at a time.
type Lock struct {
	// Pool gives the sessions: a connection is taken out of it for good
	// (it must reach the primary without a pooler in transaction mode in
	// between, which would hand the session to others).
	Pool *pgxpool.Pool
	// Name names the lock within the pool's schema ("outbox relay").
	Name string
	// Silence is how long the leader may say nothing to PostgreSQL before
	// its session is ended (0: DefaultSilence). It bounds how long a lost
	// leader keeps the lock.
	Silence time.Duration
	Logger  log.Logger
	// Standby, when set, is called when this replica starts to wait for
	// the lock (another replica leads).
	Standby func()
	// Ended, when set, is called with why a session ended: nil when ctx
	// ended it.
	Ended func(err error)
}

func (l Lock) silence() time.Duration {
	if l.Silence > 0 {
		return l.Silence
	}
	return DefaultSilence
}

func (l Lock) schema() string { return l.Pool.Config().ConnConfig.RuntimeParams["search_path"] }

// Run waits for the lock and, while it holds it, runs lead, until ctx
// ends. lead works until its context ends (the session lost, or ctx) or
// it returns; then the session is closed, which releases the lock, and Run
// waits for the lock again.
func (l Lock) Run(ctx context.Context, lead func(ctx context.Context, s *Session) error) {
	logger := l.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	backoff := time.Second
	for ctx.Err() == nil {
		err := l.term(ctx, lead)
		if ctx.Err() != nil {
			err = nil
		}
		if l.Ended != nil {
			l.Ended(err)
		}
		if err == nil {
			backoff = time.Second
			continue
		}
		level.Warn(logger).Log("msg", "the leader's session ended; trying again", "lock", l.Name, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff = min(2*backoff, 10*time.Second)
	}
}

// key is the lock's key within the session's schema: the expression the
// relay and the consumer locked with before pkg/leader, so that replicas
// of two versions exclude each other during a rolling update.
const key = `hashtextextended($1 || current_schema(), 0)`

// term is one session: it waits for the lock and leads while it holds it.
func (l Lock) term(ctx context.Context, lead func(ctx context.Context, s *Session) error) error {
	pooled, err := l.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	// Never back to the pool: closing it releases the lock.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the session ends either way
	if err := l.wait(ctx, conn); err != nil {
		return err
	}
	silence := l.silence()
	ms := fmt.Sprint(silence.Milliseconds())
	// PostgreSQL ends the session once the leader has been silent for
	// silence, in or out of a transaction, or once what it sent the leader
	// has gone unacknowledged that long.
	if _, err := conn.Exec(ctx, `SET idle_session_timeout = `+ms+`; SET idle_in_transaction_session_timeout = `+ms+`; SET tcp_user_timeout = `+ms); err != nil {
		return fmt.Errorf("set the leader's limits: %w", err)
	}
	schema := l.schema()
	leading.WithLabelValues(schema, l.Name).Set(1)
	defer leading.WithLabelValues(schema, l.Name).Set(0)
	s := &Session{conn: conn, used: time.Now()}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var beats sync.WaitGroup
	beats.Go(func() { s.heartbeat(ctx, silence/3, cancel) })
	err = lead(ctx, s)
	cancel(nil)
	beats.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause // the heartbeat failed: the session is gone
	}
	return err
}

// standbyPoll is how often a standby asks for the lock. It asks with
// pg_try_advisory_lock, which answers at once, rather than waiting inside
// pg_advisory_lock: a waiting statement holds a snapshot, which every index
// built CONCURRENTLY (a migration, in any schema of the database) waits for,
// and a wait cut short by lock_timeout ends in an ERROR that PostgreSQL
// writes to its log (a line a second for every standby of every job). A
// released lock is taken within a poll, beside the silence that a lost
// leader's release waits for.
const standbyPoll = 250 * time.Millisecond

// wait returns once the session holds the lock, asking every standbyPoll.
// Each answer is awaited at most the silence, which bounds how long a
// standby whose own connection died takes to notice.
func (l Lock) wait(ctx context.Context, conn *pgx.Conn) error {
	poll := time.NewTicker(standbyPoll)
	defer poll.Stop()
	for asked := 0; ; asked++ {
		actx, cancel := context.WithTimeout(ctx, l.silence())
		var held bool
		err := conn.QueryRow(actx, `SELECT pg_try_advisory_lock(`+key+`)`, l.Name+":").Scan(&held)
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("take the %s lock: %w", l.Name, err)
		case held:
			return nil
		case asked == 0 && l.Standby != nil:
			l.Standby()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
		}
	}
}

// Session is the leader's connection, which holds the lock. Work that
// uses it goes through Use, so the heartbeat never interleaves with it.
type Session struct {
	mu   sync.Mutex
	conn *pgx.Conn
	used time.Time // when a statement last ended
}

// Use runs fn on the session's connection; nothing else uses it meanwhile.
// Statements made there count as the leader's sign of life.
func (s *Session) Use(fn func(conn *pgx.Conn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.used = time.Now() }()
	return fn(s.conn)
}

// heartbeat pings the session whenever it has been quiet for every, and
// cancels the leader's work when the session does not answer.
func (s *Session) heartbeat(ctx context.Context, every time.Duration, lost context.CancelCauseFunc) {
	job.Ticks(ctx, every, func(ctx context.Context) bool {
		err := s.ping(ctx, every)
		if err != nil && ctx.Err() == nil {
			lost(fmt.Errorf("the leader's session does not answer: %w", err))
			return false
		}
		return true
	})
}

// ping says something on the session unless the leader's own statements
// did within every.
func (s *Session) ping(ctx context.Context, every time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.used) < every {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	err := s.conn.Ping(pctx)
	s.used = time.Now()
	return err
}
