package leader_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// replica is one process's pool in the test's schema, reaching PostgreSQL
// at addr ("" for straight), its sessions named app in schema (see
// applicationName).
func replica(t *testing.T, schema, app, addr string) *pgxpool.Pool {
	t.Helper()
	return replicaOf(t, testkit.PostgresURL(t), schema, app, addr)
}

// replicaOf is replica in the database at databaseURL.
func replicaOf(t *testing.T, databaseURL, schema, app, addr string) *pgxpool.Pool {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	if addr != "" {
		u.Host = addr
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = applicationName(schema, app)
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "5000"
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// The lock is named within the schema, which the service's migrations
	// have made by the time its jobs run.
	if _, err := pool.Exec(t.Context(), "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return pool
}

// leading counts who leads: each replica's lead runs until its context
// ends, and says so.
type leading struct {
	mu      sync.Mutex
	leaders map[string]int // replica -> terms it led
	now     string         // who leads now
}

func (l *leading) lead(name string) func(ctx context.Context, s *leader.Session) error {
	return func(ctx context.Context, s *leader.Session) error {
		l.mu.Lock()
		l.leaders[name]++
		l.now = name
		l.mu.Unlock()
		<-ctx.Done()
		l.mu.Lock()
		if l.now == name {
			l.now = ""
		}
		l.mu.Unlock()
		return nil
	}
}

func (l *leading) current() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now
}

func run(t *testing.T, lock leader.Lock, lead func(context.Context, *leader.Session) error) (stop func()) {
	t.Helper()
	var once sync.Once
	stopJobs := job.StartJobs(log.NewNopLogger(), job.Job{Name: lock.Name, Run: func(ctx context.Context) { lock.Run(ctx, lead) }})
	stop = func() { once.Do(stopJobs) }
	t.Cleanup(stop)
	return stop
}

// signal is a channel closed the first time the function is called.
func signal() (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

func awaitSignal(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not within 30 s", what)
	}
}

// session is what pg_stat_activity says of one backend.
type session struct {
	wait      string        // its wait event type, "" for none
	activeFor time.Duration // how long its statement has run, 0 when idle
}

// applicationName names a replica's sessions after its schema too: tests
// running at once all have a replica-b, and each must see only its own.
func applicationName(schema, app string) string { return schema + "/" + app }

// sessions are the backends of one application of schema, by pid and start.
func sessions(t *testing.T, pool *pgxpool.Pool, schema, app string) map[string]session {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT pid::text || '@' || backend_start::text, coalesce(wait_event_type, ''),
			CASE WHEN state = 'active' THEN (extract(epoch FROM clock_timestamp() - query_start) * 1e6)::bigint ELSE 0 END
		FROM pg_stat_activity WHERE application_name = $1`, applicationName(schema, app))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]session{}
	var id, wait string
	var micros int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &wait, &micros}, func() error {
		out[id] = session{wait: wait, activeFor: time.Duration(micros) * time.Microsecond}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A standby asks for the lock on one connection it keeps: no connection
// opened and closed per poll, as the relay's standbys did (five a second
// each), and no statement that waits. A statement waiting in
// pg_advisory_lock holds a snapshot (every index built CONCURRENTLY waits
// for it) and, cut short by its lock_timeout, ends in an ERROR line in
// PostgreSQL's log, a second for every standby. It takes over once the
// leader stops.
func TestStandbyAsksQuietlyOnOneConnection(t *testing.T) {
	t.Parallel()
	schema := testkit.NewDatabaseSchema(t)
	observer := replica(t, schema, "observer", "")
	l := &leading{leaders: map[string]int{}}
	stopA := run(t, leader.Lock{Pool: replica(t, schema, "replica-a", ""), Name: "work", Silence: 2 * time.Second}, l.lead("a"))
	testkit.Eventually(t, "a leads", 30*time.Second, func() bool { return l.current() == "a" })
	standing, standby := signal()
	run(t, leader.Lock{Pool: replica(t, schema, "replica-b", ""), Name: "work", Silence: 2 * time.Second, Standby: standby}, l.lead("b"))
	awaitSignal(t, "b stands by", standing)

	seen := map[string]bool{}
	for range 150 { // three seconds, a dozen of the standby's polls
		for id, s := range sessions(t, observer, schema, "replica-b") {
			seen[id] = true
			if s.wait == "Lock" || s.activeFor > 500*time.Millisecond {
				t.Fatalf("the standby's session %s waits in a statement (wait event type %q, active for %s)", id, s.wait, s.activeFor)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(seen) != 1 {
		t.Fatalf("the standby used %d sessions in 3 s (%v), want the one it keeps", len(seen), seen)
	}
	stopA()
	testkit.Eventually(t, "b leads once a stopped", 30*time.Second, func() bool { return l.current() == "b" })
	if l.leaders["a"] != 1 || l.leaders["b"] != 1 {
		t.Errorf("terms led: %v, want one each", l.leaders)
	}
}

// A standby holds no index build back: CREATE INDEX CONCURRENTLY (a
// migration of any schema in the database) waits for every older snapshot,
// and a standby that waited in pg_advisory_lock for the silence (a minute
// here) held one that long per statement. The build runs in a database
// of the test's own, so that it times the standby, not the transactions
// of other packages' tests in the shared one.
func TestStandbyHoldsNoIndexBuildBack(t *testing.T) {
	t.Parallel()
	database, schema := testkit.NewDatabase(t), "standby"
	observer := replicaOf(t, database, schema, "observer", "")
	l := &leading{leaders: map[string]int{}}
	run(t, leader.Lock{Pool: replicaOf(t, database, schema, "leader", ""), Name: "work", Silence: time.Minute}, l.lead("leader"))
	testkit.Eventually(t, "the leader leads", 30*time.Second, func() bool { return l.current() == "leader" })
	standing, standby := signal()
	run(t, leader.Lock{Pool: replicaOf(t, database, schema, "standby", ""), Name: "work", Silence: time.Minute, Standby: standby}, l.lead("standby"))
	awaitSignal(t, "the standby stands by", standing)
	ctx := t.Context()
	if _, err := observer.Exec(ctx, `CREATE TABLE built (id int)`); err != nil {
		t.Fatal(err)
	}
	conn, err := observer.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := conn.Exec(ctx, `CREATE INDEX CONCURRENTLY built_by_id ON built (id)`); err != nil {
		t.Fatal(err)
	}
	// Far below the silence: the build did not wait for a standby's
	// statement to run out (with several seconds for the machine's load).
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the index build took %s beside a standby, whose silence is a minute", took)
	}
	if l.current() != "leader" || l.leaders["standby"] != 0 {
		t.Errorf("terms led: %v, want the leader's only", l.leaders)
	}
}

// A leader that stops talking (its process frozen, its node cut off) loses
// the lock: PostgreSQL ends its silent session and a standby leads. The
// frozen one is played by a proxy that stops forwarding without closing
// anything, as a frozen process's kernel keeps its connections open. When
// it wakes, its session is gone and it stands by.
func TestSilentLeaderIsReplaced(t *testing.T) {
	t.Parallel()
	schema := testkit.NewDatabaseSchema(t)
	u, err := url.Parse(testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := startFreezableProxy(t, u.Host)
	l := &leading{leaders: map[string]int{}}
	var aLost atomic.Int32
	lockA := leader.Lock{Pool: replica(t, schema, "replica-a", proxy.addr), Name: "work", Silence: time.Second,
		Ended: func(err error) {
			if err != nil {
				aLost.Add(1)
			}
		}}
	run(t, lockA, l.lead("a"))
	testkit.Eventually(t, "a leads", 30*time.Second, func() bool { return l.current() == "a" })
	run(t, leader.Lock{Pool: replica(t, schema, "replica-b", ""), Name: "work", Silence: time.Second}, l.lead("b"))
	time.Sleep(2 * time.Second) // a keeps the lead while it talks: its heartbeat
	if got := l.current(); got != "a" {
		t.Fatalf("%q leads while a is alive and talking", got)
	}

	proxy.freeze()
	testkit.Eventually(t, "b leads while a is frozen", 30*time.Second, func() bool { return l.current() == "b" })
	proxy.thaw()
	testkit.Eventually(t, "a gives the lead up", 30*time.Second, func() bool { return aLost.Load() > 0 })
	time.Sleep(2 * time.Second)
	if got := l.current(); got != "b" {
		t.Errorf("%q leads after a woke, want b to keep the lead", got)
	}
	if l.leaders["a"] != 1 {
		t.Errorf("a led %d terms, want 1", l.leaders["a"])
	}
}

// freezableProxy forwards TCP to a target and can stop forwarding without
// closing anything, as a frozen process neither reads nor writes.
type freezableProxy struct {
	addr   string
	mu     sync.Mutex
	frozen bool
	thawed *sync.Cond
}

func startFreezableProxy(t *testing.T, target string) *freezableProxy {
	t.Helper()
	p := &freezableProxy{}
	p.thawed = sync.NewCond(&p.mu)
	var conns sync.WaitGroup
	t.Cleanup(func() { // after the proxy stopped accepting
		p.thaw()
		conns.Wait()
	})
	p.addr = testkit.Proxy(t, target, func(client, server net.Conn) {
		conns.Go(func() { p.pipe(server, client); server.Close(); client.Close() })
		conns.Go(func() { p.pipe(client, server); server.Close(); client.Close() })
	})
	return p
}

// pipe copies from src to dst, holding each chunk while frozen.
func (p *freezableProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.frozen {
			p.thawed.Wait()
		}
		p.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *freezableProxy) freeze() { p.mu.Lock(); p.frozen = true; p.mu.Unlock() }

func (p *freezableProxy) thaw() {
	p.mu.Lock()
	p.frozen = false
	p.thawed.Broadcast()
	p.mu.Unlock()
}

// Maintenance runs on one replica at a time, a task's steps one after the
// other until none is left; a task that fails is counted, marked failing
// and tried again, and marked whole once it runs through.
func TestMaintenanceRunsOnTheLeaderStepByStep(t *testing.T) {
	t.Parallel()
	schema := testkit.NewDatabaseSchema(t)
	observer := replica(t, schema, "observer", "")
	if _, err := observer.Exec(t.Context(), `CREATE TABLE `+pgx.Identifier{schema, "steps"}.Sanitize()+` (replica text, task text)`); err != nil {
		t.Fatal(err)
	}
	var fails atomic.Int32
	fails.Store(2)
	tasks := func(name string) []leader.Task {
		step := func(task string) func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			return func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
				if task == "flaky" && fails.Add(-1) >= 0 {
					return 0, false, errors.New("the database went away")
				}
				var n int64
				err := conn.QueryRow(ctx, `WITH s AS (INSERT INTO steps VALUES ($1, $2)) SELECT count(*) + 1 FROM steps WHERE task = $2`, name, task).Scan(&n)
				return 1, n < 5, err
			}
		}
		return []leader.Task{{Name: "steady", Every: time.Hour, Step: step("steady")}, {Name: "flaky", Every: 100 * time.Millisecond, Step: step("flaky")}}
	}
	for _, name := range []string{"a", "b"} {
		m := leader.Maintenance{Lock: leader.Lock{Pool: replica(t, schema, "replica-"+name, ""), Name: "maintenance"}, Tasks: tasks(name)}
		stop := job.StartJobs(log.NewNopLogger(), m.Job())
		t.Cleanup(stop)
	}
	count := func(query string) int {
		var n int
		if err := observer.QueryRow(t.Context(), query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testkit.Eventually(t, "both tasks ran through", 60*time.Second, func() bool {
		return count(`SELECT count(*) FROM `+pgx.Identifier{schema, "steps"}.Sanitize()+` WHERE task = 'steady'`) == 5 &&
			count(`SELECT count(*) FROM `+pgx.Identifier{schema, "steps"}.Sanitize()+` WHERE task = 'flaky'`) >= 5
	})
	if n := count(`SELECT count(DISTINCT replica) FROM ` + pgx.Identifier{schema, "steps"}.Sanitize()); n != 1 {
		t.Errorf("%d replicas ran maintenance, want the one that leads", n)
	}
	labels := map[string]string{"schema": schema, "task": "flaky"}
	if n, _ := testkit.Metric(t, "registry_maintenance_failures_total", labels); n != 2 {
		t.Errorf("registry_maintenance_failures_total = %v, want the 2 failed runs", n)
	}
	testkit.Eventually(t, "the flaky task no longer marked failing", 10*time.Second, func() bool {
		v, ok := testkit.Metric(t, "registry_maintenance_failing", labels)
		return ok && v == 0
	})
	if v, _ := testkit.Metric(t, "registry_maintenance_rows_total", map[string]string{"schema": schema, "task": "steady"}); v != 5 {
		t.Errorf("registry_maintenance_rows_total of the steady task = %v, want 5", v)
	}
}

// A partition whose DETACH ... CONCURRENTLY is still under way in another
// session (waiting, as it does, for the transactions that began before
// it) is left to that session: List neither waits for it nor fails, and
// lists the partitions still attached; once the detach completes, the
// partition is gone.
func TestListLeavesADetachUnderWayToItsSession(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := testkit.NewDatabaseSchema(t)
	pool := replica(t, schema, "partitions", "")
	if _, err := pool.Exec(ctx, `CREATE SEQUENCE items_seq;
		CREATE TABLE items (id bigint NOT NULL) PARTITION BY RANGE (id);
		CREATE TABLE items_0 PARTITION OF items FOR VALUES FROM (0) TO (100);
		CREATE TABLE items_100 PARTITION OF items FOR VALUES FROM (100) TO (200)`); err != nil {
		t.Fatal(err)
	}
	parts := leader.Partitions{Table: "items", Key: leader.SeqKey{Sequence: "items_seq", Width: 100}, Ahead: 1}

	// An older transaction that has read the table: the detach's second
	// step waits for it, with the partition marked pending meanwhile.
	older, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // released below on success
	if _, err := older.Exec(ctx, "SELECT count(*) FROM items"); err != nil {
		t.Fatal(err)
	}
	detaching, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer detaching.Release()
	detached := make(chan error, 1)
	go func() {
		_, err := detaching.Exec(ctx, "ALTER TABLE items DETACH PARTITION items_0 CONCURRENTLY")
		detached <- err
	}()
	lister, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lister.Release()
	testkit.Eventually(t, "the detach is under way", 30*time.Second, func() bool {
		var pending bool
		err := lister.QueryRow(ctx, "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'items_0'::regclass").Scan(&pending)
		return err == nil && pending
	})

	listCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := parts.List(listCtx, lister.Conn())
	if err != nil {
		t.Fatalf("List beside a detach under way: %v", err)
	}
	if len(list) != 1 || list[0].Name != "items_100" {
		t.Fatalf("List = %+v, want items_100 alone", list)
	}
	if err := older.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-detached; err != nil {
		t.Fatalf("the detach under way failed: %v", err)
	}
	var attached int
	if err := lister.QueryRow(ctx, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'items'::regclass").Scan(&attached); err != nil {
		t.Fatal(err)
	}
	if attached != 1 {
		t.Fatalf("%d partitions attached after the detach, want 1", attached)
	}
}

// A queue is vacuumed once its reader has taken After rows out, and not
// again within Every; PostgreSQL counts the vacuums of the table.
func TestQueueVacuumRunsAfterEnoughRowsAndNotTooOften(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := replica(t, testkit.NewDatabaseSchema(t), "queue", "")
	if _, err := pool.Exec(ctx, `CREATE TABLE queue (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	q := &leader.QueueVacuum{Table: "queue", After: 100, Every: time.Hour}
	vacuumed := func() int {
		t.Helper()
		// A vacuum reports its count at once, from whichever session ran it.
		var n int
		if err := pool.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'queue'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, step := range []struct {
		name  string
		taken int
		want  int
	}{
		{"fewer than After taken", 60, 0},
		{"After reached", 40, 1},
		{"After again, within Every", 150, 1},
	} {
		if err := q.Took(ctx, pool, step.taken); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := vacuumed(); got != step.want {
			t.Errorf("%s: %d vacuums, want %d", step.name, got, step.want)
		}
	}
}
