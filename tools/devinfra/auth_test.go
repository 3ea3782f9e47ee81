package devinfra

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

// requirePrivate fails unless path exists with mode 0600.
func requirePrivate(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("%s has mode %v, want 0600: it holds a password", path, mode)
	}
}

// withoutPassword is url with its password removed (the user kept).
func withoutPassword(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(u.User.Username())
	return u.String()
}

// wantPostgresRefusal fails unless connecting to url is refused for want of
// the right password.
func wantPostgresRefusal(t *testing.T, what, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		conn.Close(ctx)
		t.Errorf("%s: connected", what)
		return
	}
	var pgErr *pgconn.PgError
	// 28P01: invalid_password, which is also what a missing one gets.
	if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Errorf("%s: %v, want password authentication failed (28P01)", what, err)
	}
}

// Nobody gets into the server for being local: not over TCP without the
// password or with another one, not over the Unix socket either; the
// password is generated once, kept in a 0600 file and reused.
func TestPostgresNeedsThePassword(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(serverTempDir(t), "pgdata")
	pg := startTestPostgres(t, PostgresOptions{DataDir: dataDir, Ephemeral: true})
	if pg.CredentialsFile != dataDir+".credentials" || pg.Password == "" || !strings.Contains(pg.URL, pg.Password) {
		t.Fatalf("credentials file %s, password %q, URL without it: %+v", pg.CredentialsFile, pg.Password, pg)
	}
	requirePrivate(t, pg.CredentialsFile)
	var method string
	if err := connectPostgres(t, pg.URL).QueryRow(context.Background(),
		"SELECT left(rolpassword, 13) FROM pg_authid WHERE rolname = 'postgres'").Scan(&method); err != nil || method != "SCRAM-SHA-256" {
		t.Errorf("the superuser's password is stored as %q (%v), want a SCRAM-SHA-256 verifier", method, err)
	}

	wantPostgresRefusal(t, "no password", withoutPassword(t, pg.URL))
	wrong, _ := url.Parse(pg.URL)
	wrong.User = url.UserPassword("postgres", "not-the-password")
	wantPostgresRefusal(t, "a wrong password", wrong.String())
	if dir := socketDir(dataDir); dir != "" {
		wantPostgresRefusal(t, "the Unix socket without a password",
			"host="+dir+" port="+pgPort(pg)+" user=postgres dbname=postgres sslmode=disable")
	}

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	again := startTestPostgres(t, PostgresOptions{DataDir: dataDir, Ephemeral: true})
	if again.Password != pg.Password {
		t.Error("a second start changed the password")
	}
	connectPostgres(t, again.URL)
}

func pgPort(pg *Postgres) string { u, _ := url.Parse(pg.URL); return u.Port() }

// A data dir made before passwords (initdb -A trust, no credentials file)
// gets a password at its next start and trusts nobody any more.
func TestPostgresBringsATrustingDataDirUnderPasswords(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(serverTempDir(t), "pgdata")
	pg := startTestPostgres(t, PostgresOptions{DataDir: dataDir, Ephemeral: true})
	if _, err := connectPostgres(t, pg.URL).Exec(context.Background(), "CREATE TABLE kept (v int)"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	// What an older devinfra left: trust for everyone, and no file.
	if err := os.WriteFile(filepath.Join(dataDir, "pg_hba.conf"), []byte("local all all trust\nhost all all 127.0.0.1/32 trust\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pg.CredentialsFile); err != nil {
		t.Fatal(err)
	}

	again := startTestPostgres(t, PostgresOptions{DataDir: dataDir, Ephemeral: true})
	if again.Password == pg.Password {
		t.Error("the password was not renewed")
	}
	requirePrivate(t, again.CredentialsFile)
	wantPostgresRefusal(t, "no password", withoutPassword(t, again.URL))
	if _, err := connectPostgres(t, again.URL).Exec(context.Background(), "SELECT * FROM kept"); err != nil {
		t.Errorf("data of the trusting days: %v", err)
	}
}

// A crash (SIGKILL of the server and its backends) loses nothing that
// was committed with the default durability, and Restart brings the server
// back on its port; a paused server (SIGSTOP) answers nothing until it is
// resumed.
func TestPostgresKillPauseRestart(t *testing.T) {
	t.Parallel()
	pg := startTestPostgres(t, PostgresOptions{DataDir: filepath.Join(serverTempDir(t), "pgdata")})
	ctx := context.Background()
	if _, err := connectPostgres(t, pg.URL).Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}

	// An open session is served by a backend of its own, which PostgreSQL
	// puts in a process group of its own: pausing the postmaster's group
	// alone would leave it answering.
	open := connectPostgres(t, pg.URL)
	if err := pg.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err := open.Ping(paused)
	cancel()
	if err == nil {
		t.Error("a session of a paused server answered")
	}
	if err := pg.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	connectPostgres(t, pg.URL)

	backends := descendants(pg.srv.pid())
	if len(backends) == 0 {
		t.Fatal("the server has no backends; the kill below would prove little")
	}
	port := pg.Port
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range backends {
		if running(pid) {
			t.Errorf("backend %d outlived the kill", pid)
		}
	}
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if pg.Port != port {
		t.Errorf("restarted on port %d, not %d", pg.Port, port)
	}
	var n int
	if err := connectPostgres(t, pg.URL).QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 1 {
		t.Errorf("after the crash: %d rows, %v; want the committed one", n, err)
	}
}

func startTestRedis(t *testing.T, o RedisOptions) *Redis {
	t.Helper()
	rd, err := StartRedis(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rd.Stop() })
	return rd
}

// Redis needs a password, keeps its users to their keys and commands, and
// writes nothing to disk: not while running, not at shutdown, not when
// killed; a restart comes back empty, with the same password and users.
func TestRedisAuthAndNothingOnDisk(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dataDir := filepath.Join(parent, "redis")
	svc := RedisUser{Name: "svc", Password: "svc-secret", Keys: "svc:*", Commands: []string{"get", "set", "ping"}}
	rd := startTestRedis(t, RedisOptions{DataDir: dataDir, Users: []RedisUser{svc}})
	requirePrivate(t, rd.CredentialsFile)
	ctx := context.Background()

	admin := connectRedis(t, rd.URL)
	if err := admin.Set(ctx, "other:k", "theirs", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := connectRedis(t, withoutPassword(t, rd.URL)).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("without a password: %v, want NOAUTH", err)
	}
	if err := connectRedis(t, rd.UserURL("", "wrong")).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("with a wrong password: %v, want WRONGPASS", err)
	}

	user := connectRedis(t, rd.UserURL(svc.Name, svc.Password))
	if err := user.Set(ctx, "svc:k", "mine", 0).Err(); err != nil {
		t.Errorf("the user's own key: %v", err)
	}
	for name, cmd := range map[string]func() error{
		"read another's key":  func() error { return user.Get(ctx, "other:k").Err() },
		"write another's key": func() error { return user.Set(ctx, "other:k", "mine now", 0).Err() },
		"list keys":           func() error { return user.Scan(ctx, 0, "*", 10).Err() },
		"flush everything":    func() error { return user.FlushAll(ctx).Err() },
		"a command not given": func() error { return user.Del(ctx, "svc:k").Err() },
	} {
		if err := cmd(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%s: %v, want NOPERM", name, err)
		}
	}
	if got, _ := admin.Get(ctx, "other:k").Result(); got != "theirs" {
		t.Errorf("another's key is %q after the user's attempts", got)
	}

	requireEmpty := func(when string) {
		t.Helper()
		if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
			t.Errorf("%s: the data dir holds %d entries, want none", when, len(entries))
		}
		var found []string
		_ = filepath.WalkDir(parent, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".rdb") || strings.Contains(d.Name(), "appendonly") || strings.HasSuffix(path, ".aof")) {
				found = append(found, path)
			}
			return nil
		})
		if len(found) > 0 {
			t.Errorf("%s: Redis files on disk: %v", when, found)
		}
	}
	requireEmpty("running")
	for _, end := range []struct {
		name string
		stop func() error
	}{{"stopped", rd.Stop}, {"killed", rd.Kill}} {
		if err := admin.Set(ctx, "svc:k", "cached", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := end.stop(); err != nil {
			t.Fatal(err)
		}
		requireEmpty(end.name)
		if err := rd.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if err := admin.Get(ctx, "svc:k").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s and restarted: the key is still there (%v)", end.name, err)
		}
		if err := user.Set(ctx, "svc:k", "again", 0).Err(); err != nil {
			t.Errorf("%s and restarted: the user is gone: %v", end.name, err)
		}
	}
}
