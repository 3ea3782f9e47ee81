// The harness runs integration tests against real PostgreSQL, Redis,
// S3 (MinIO) and NATS (JetStream) servers. Wire it up once per package:
//
//	func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
//
// Where the servers come from:
//
//   - TEST_DATABASE_URL (postgres://... of a superuser), TEST_REDIS_URL
//     (redis://... of a user who may do everything; both URLs carry the
//     password, since devinfra's servers let nobody in without one) and
//     TEST_S3_ENDPOINT with TEST_S3_ACCESS_KEY and
//     TEST_S3_SECRET_KEY, and TEST_NATS_URL with TEST_NATS_USER and
//     TEST_NATS_PASSWORD, when set, are used as they are. `make test` starts
//     one shared set for the whole run (tools/devinfra/cmd/testinfra) and sets
//     them all, so packages do not each pay for a server start.
//   - Otherwise the first test that asks for a server starts a private,
//     ephemeral one (via tools/devinfra; tools/scripts/ensure-deps.sh installs
//     PostgreSQL and Redis, devinfra builds MinIO), so a package that only
//     uses Postgres never starts Redis or MinIO. Main stops what was started,
//     and removes its data, when the tests end or on SIGINT/SIGTERM.
//
// Servers are shared by all tests of a package (and, under `make test`, by all
// packages), so each test works inside its own schema (NewDatabaseSchema), key
// prefix (RedisPrefix), bucket (S3) and stream (NATS), which are removed when
// the test ends.

package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

const (
	databaseURLEnv = "TEST_DATABASE_URL"
	redisURLEnv    = "TEST_REDIS_URL"
	s3EndpointEnv  = "TEST_S3_ENDPOINT"
	s3AccessKeyEnv = "TEST_S3_ACCESS_KEY"
	s3SecretKeyEnv = "TEST_S3_SECRET_KEY"
	s3RegionEnv    = "TEST_S3_REGION"

	tempDirPrefix  = "testharness-"
	startTimeout   = 2 * time.Minute
	cleanupTimeout = 30 * time.Second
)

var h harness

// harness holds the servers of this test binary.
type harness struct {
	mu       sync.Mutex
	running  bool // Main is running the tests
	shutDown bool
	dir      string // private servers' data, created on first need
	pg       *devinfra.Postgres
	redis    *devinfra.Redis
	minio    *devinfra.Minio
	nats     *devinfra.Nats

	postgres, redisServer lazyServer[string]
	s3Server              lazyServer[S3Server]
	natsServer            lazyServer[NATSServer]
}

// Main runs the tests and then stops any server it started. It returns the
// exit code for os.Exit.
func Main(m *testing.M) int {
	h.mu.Lock()
	h.running = true
	h.mu.Unlock()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		if err := h.shutdown(); err != nil {
			fmt.Fprintln(os.Stderr, "testharness:", err)
		}
		// Die of the signal itself, so that callers see how we ended.
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	}()

	code := m.Run()
	signal.Stop(sigs)
	close(sigs)
	if err := h.shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "testharness:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// PostgresURL returns the URL of the test PostgreSQL server, connecting as a
// superuser to database "postgres". It starts the server on first use.
func PostgresURL(t testing.TB) string {
	t.Helper()
	h.requireMain(t)
	return h.postgres.url(t, h.startPostgres)
}

// RedisURL returns the URL of the test Redis server. It starts the server on
// first use.
func RedisURL(t testing.TB) string {
	t.Helper()
	h.requireMain(t)
	return h.redisServer.url(t, h.startRedis)
}

// lazyServer starts a server on its first use and remembers the outcome,
// so every later test gets the same address or the same failure.
type lazyServer[T any] struct {
	once sync.Once
	addr T
	err  error
}

func (l *lazyServer[T]) url(t testing.TB, start func() (T, error)) T {
	t.Helper()
	l.once.Do(func() { l.addr, l.err = start() })
	if l.err != nil {
		t.Fatalf("testharness: %v", l.err)
	}
	return l.addr
}

// NewDatabaseSchema returns a schema name no other test uses, such as
// "t_3f2a9c1b0d4e5f67". It does not create the schema (the code under test,
// usually its migrations, does), but drops it with everything in it when the
// test ends.
func NewDatabaseSchema(t testing.TB) string {
	t.Helper()
	url := PostgresURL(t)
	schema := "t_" + randomHex(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := dropSchema(ctx, url, schema); err != nil {
			t.Errorf("testharness: %v", err)
		}
	})
	return schema
}

// NewDatabase creates a database no other test uses and returns its URL
// (as PostgresURL's, a superuser's); it drops the database when the test
// ends. Schemas share a database, and with it what PostgreSQL waits for
// across the whole database: CREATE INDEX CONCURRENTLY waits for every
// older transaction in it, and advisory locks (the migrations' among them)
// are the database's. A test that holds a snapshot open on purpose, or
// that times an index build, needs a database of its own, or another
// package's migration running beside it waits for it, or it for that.
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := PostgresURL(t)
	name := "t_" + randomHex(t)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	database, err := devinfra.EnsureDatabase(ctx, server, name)
	if err != nil {
		t.Fatalf("testharness: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := devinfra.DropDatabase(ctx, server, name); err != nil {
			t.Errorf("testharness: %v", err)
		}
	})
	return database
}

func dropSchema(ctx context.Context, url, schema string) error {
	admin, err := adminPool(ctx, url)
	if err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// ServerDir is t.TempDir for a test that starts its own server: the
// directories are traversable by the postgres user, which PostgreSQL runs
// as when the tests run as root.
func ServerDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// RedisPrefix returns a key prefix no other test uses, such as
// "t_3f2a9c1b0d4e5f67:". Keys starting with it are deleted when the test ends.
func RedisPrefix(t testing.TB) string {
	t.Helper()
	url := RedisURL(t)
	prefix := "t_" + randomHex(t) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := deleteKeys(ctx, url, prefix); err != nil {
			t.Errorf("testharness: %v", err)
		}
	})
	return prefix
}

// deleteKeys removes the keys under prefix. The prefix is hex, so it holds no
// glob metacharacters that SCAN MATCH would misread.
func deleteKeys(ctx context.Context, url, prefix string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("delete keys %s*: %w", prefix, err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	var keys []string
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("delete keys %s*: scan: %w", prefix, err)
	}
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 1000)]
		keys = keys[len(batch):]
		if err := c.Del(ctx, batch...).Err(); err != nil {
			return fmt.Errorf("delete keys %s*: %w", prefix, err)
		}
	}
	return nil
}

func randomHex(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testharness: %v", err)
	}
	return hex.EncodeToString(b)
}

func (h *harness) requireMain(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	running := h.running
	h.mu.Unlock()
	if !running {
		t.Fatal("testharness: call testharness.Main from TestMain: func TestMain(m *testing.M) { os.Exit(testharness.Main(m)) }")
	}
}

func (h *harness) startPostgres() (string, error) {
	if url := os.Getenv(databaseURLEnv); url != "" {
		return url, nil
	}
	dir, err := h.dataDir()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	pg, err := devinfra.StartPostgres(ctx, devinfra.PostgresOptions{
		DataDir:   filepath.Join(dir, "postgres"),
		Ephemeral: true,
	})
	if err != nil {
		return "", fmt.Errorf("%w (or set %s)", err, databaseURLEnv)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutDown {
		return "", errors.Join(errors.New("shutting down"), pg.Stop())
	}
	h.pg = pg
	return pg.URL, nil
}

func (h *harness) startRedis() (string, error) {
	if url := os.Getenv(redisURLEnv); url != "" {
		return url, nil
	}
	dir, err := h.dataDir()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	rd, err := devinfra.StartRedis(ctx, devinfra.RedisOptions{DataDir: filepath.Join(dir, "redis")})
	if err != nil {
		return "", fmt.Errorf("%w (or set %s)", err, redisURLEnv)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutDown {
		return "", errors.Join(errors.New("shutting down"), rd.Stop())
	}
	h.redis = rd
	return rd.URL, nil
}

// dataDir returns the temp dir for private servers, creating it on first use.
func (h *harness) dataDir() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir != "" {
		return h.dir, nil
	}
	if h.shutDown {
		return "", errors.New("shutting down")
	}
	removeAbandonedDirs()
	// The pid in the name lets a later run tell an abandoned dir from a live one.
	dir, err := devinfra.MkdirTemp(fmt.Sprintf("%s%d-", tempDirPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("create server dir: %w", err)
	}
	h.dir = dir
	return dir, nil
}

// removeAbandonedDirs deletes server dirs of test binaries that died without
// cleaning up (a panicking test or a -timeout ends the process before Main
// returns; Pdeathsig has already stopped their servers).
func removeAbandonedDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), tempDirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || processExists(pid) {
			continue
		}
		_ = os.RemoveAll(dir) // best effort: it may belong to another user
	}
}

func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// shutdown stops the servers Main started and removes their data. Later
// start attempts fail instead of leaking a server.
func (h *harness) shutdown() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shutDown = true
	closeAdminPools()
	var errs []error
	if h.pg != nil {
		errs = append(errs, h.pg.Stop())
		h.pg = nil
	}
	if h.redis != nil {
		errs = append(errs, h.redis.Stop())
		h.redis = nil
	}
	if h.minio != nil {
		errs = append(errs, h.minio.Stop())
		h.minio = nil
	}
	if h.nats != nil {
		errs = append(errs, h.nats.Stop())
		h.nats = nil
	}
	if h.dir != "" {
		if err := os.RemoveAll(h.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove server dir: %w", err))
		}
		h.dir = ""
	}
	return errors.Join(errs...)
}
