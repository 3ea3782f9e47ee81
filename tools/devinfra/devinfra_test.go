package devinfra

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a parent that starts servers and
// then gets killed, to check that Pdeathsig takes the servers down with it.
const helperEnv = "DEVINFRA_TEST_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		runHelper(dir)
		return
	}
	if count := os.Getenv(freePortsHelperEnv); count != "" {
		printFreePorts(count)
	}
	os.Exit(m.Run())
}

func runHelper(dir string) {
	ctx := context.Background()
	pg, err := StartPostgres(ctx, PostgresOptions{DataDir: filepath.Join(dir, "pg"), Ephemeral: true})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	rd, err := StartRedis(ctx, RedisOptions{DataDir: filepath.Join(dir, "redis")})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	m, err := StartMinio(ctx, MinioOptions{DataDir: filepath.Join(dir, "minio")})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY", pg.srv.pid(), pg.Port, rd.srv.pid(), rd.Port, m.srv.pid(), m.Port)
	select {}
}

// serverTempDir returns a temp dir that the postgres user can reach even when
// the tests run as root, removed when the test ends.
func serverTempDir(t *testing.T) string {
	t.Helper()
	dir, err := MkdirTemp("devinfra-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startTestPostgres(t *testing.T, o PostgresOptions) *Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pg, err := StartPostgres(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	return pg
}

// alive reports whether pid is a running (not zombie) process. Orphans are
// reparented to pid 1, which in a container may never reap them. Every
// thread counts: a killed multi-threaded server (MinIO, a Go program) shows
// its main thread as a zombie while other threads are still exiting, and its
// sockets stay open until the last one has.
func alive(pid int) bool {
	if _, running := processState(pid); running {
		return true
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // exited meanwhile
		}
		s := string(stat)
		if end := strings.LastIndexByte(s, ')'); end >= 0 && end+2 < len(s) && s[end+2] != 'Z' && s[end+2] != 'X' {
			return true
		}
	}
	return false
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			kids = append(kids, child)
		}
	}
	return kids
}

func requireGone(t *testing.T, what string, pids []int, port int) {
	t.Helper()
	start := time.Now()
	for _, pid := range pids {
		for alive(pid) {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: pid %d still running", what, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("%s: all %d processes gone after %s", what, len(pids), time.Since(start).Round(time.Millisecond))
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("%s: port %d still taken: %v", what, port, err)
	}
	l.Close()
}

func TestBinaries(t *testing.T) {
	dir, err := PostgresBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if !hasServerBinaries(dir) {
		t.Errorf("PostgresBinDir() = %s, which lacks initdb or postgres", dir)
	}
	if _, err := RedisServerPath(); err != nil {
		t.Fatal(err)
	}
}

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("port %d from FreePort is not free: %v", port, err)
	}
	l.Close()
}

// REGISTRY_PG_SETTINGS gives a server more settings (make bench with an
// installation's shared_buffers). Not parallel: it sets the environment.
func TestPostgresTakesSettingsFromTheEnvironment(t *testing.T) {
	t.Setenv("REGISTRY_PG_SETTINGS", "work_mem=7MB  shared_buffers=48MB")
	pg := startTestPostgres(t, PostgresOptions{DataDir: filepath.Join(serverTempDir(t), "pgdata"), Ephemeral: true})
	conn := connectPostgres(t, pg.URL)
	defer conn.Close(context.Background())
	for setting, want := range map[string]string{"work_mem": "7MB", "shared_buffers": "48MB", "max_connections": "200"} {
		var got string
		if err := conn.QueryRow(context.Background(), "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}

func TestPostgresKeepsDataAcrossRestart(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(serverTempDir(t), "pgdata")
	ctx := context.Background()

	begin := time.Now()
	pg := startTestPostgres(t, PostgresOptions{DataDir: dataDir})
	t.Logf("cold start (initdb with fsync, then server): %s", time.Since(begin))

	conn := connectPostgres(t, pg.URL)
	for setting, want := range map[string]string{"max_connections": "200", "listen_addresses": "127.0.0.1", "fsync": "on"} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	pid, children := pg.srv.pid(), childrenOf(t, pg.srv.pid())
	if len(children) == 0 {
		t.Fatal("postmaster has no children; the process check below would prove nothing")
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, "after Stop", append(children, pid), pg.Port)

	begin = time.Now()
	pg = startTestPostgres(t, PostgresOptions{DataDir: dataDir})
	t.Logf("warm start (existing data dir): %s", time.Since(begin))
	var v string
	if err := connectPostgres(t, pg.URL).QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "still here" {
		t.Errorf("got %q after restart", v)
	}
}

func TestPostgresEphemeral(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	pg := startTestPostgres(t, PostgresOptions{DataDir: filepath.Join(serverTempDir(t), "pgdata"), Ephemeral: true})
	t.Logf("cold ephemeral start: %s", time.Since(begin))

	var fsync, syncCommit string
	err := connectPostgres(t, pg.URL).QueryRow(context.Background(),
		"SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit)
	if err != nil {
		t.Fatal(err)
	}
	if fsync != "off" || syncCommit != "off" {
		t.Errorf("fsync=%s synchronous_commit=%s, want both off", fsync, syncCommit)
	}
	if _, err := os.Stat(pg.LogFile); err != nil {
		t.Errorf("log file: %v", err)
	}
}

func TestPostgresToleratesStalePidFile(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(serverTempDir(t), "pgdata")
	pg := startTestPostgres(t, PostgresOptions{DataDir: dataDir, Ephemeral: true})
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	// As after a SIGKILL whose pid has since been reused by an unrelated process.
	stale := fmt.Sprintf("%d\n%s\n", os.Getpid(), dataDir)
	if err := os.WriteFile(filepath.Join(dataDir, "postmaster.pid"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	startTestPostgres(t, PostgresOptions{DataDir: dataDir, Ephemeral: true})
}

func TestPostgresRefusesUnreachableDataDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the data dir to another user")
	}
	t.Parallel()
	locked := filepath.Join(serverTempDir(t), "locked")
	if err := os.Mkdir(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := StartPostgres(context.Background(), PostgresOptions{DataDir: filepath.Join(locked, "pgdata")})
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("got %v, want an error saying the postgres user cannot reach the dir", err)
	}
}

func TestRedis(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "redis")
	ctx := context.Background()
	rd, err := StartRedis(ctx, RedisOptions{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rd.Stop() })

	c := connectRedis(t, rd.URL)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"save": "", "appendonly": "no", "bind": "127.0.0.1", "protected-mode": "yes"} {
		if cfg[key] != want {
			t.Errorf("config %s = %q, want %q", key, cfg[key], want)
		}
	}
	c.Close()

	pid := rd.srv.pid()
	if err := rd.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, "after Stop", []int{pid}, rd.Port)
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Errorf("non-persistent redis wrote %d entries to its data dir", len(entries))
	}
}

// TestKilledParentLeavesNoServers SIGKILLs a process that started servers and
// checks that Pdeathsig (set alongside a credential change for postgres)
// takes them and all their children down.
func TestKilledParentLeavesNoServers(t *testing.T) {
	t.Parallel()
	dir := serverTempDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	cmd.Stderr = os.Stderr
	// The helper's own Pdeathsig only matters if this test dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY ") {
		_ = cmd.Process.Kill()
		t.Fatalf("helper: %q, %v", line, err)
	}
	var pgPid, pgPort, rdPid, rdPort, minioPid, minioPort int
	if _, err := fmt.Sscan(strings.TrimPrefix(line, "READY "), &pgPid, &pgPort, &rdPid, &rdPort, &minioPid, &minioPort); err != nil {
		t.Fatal(err)
	}
	pgChildren := childrenOf(t, pgPid)
	if len(pgChildren) == 0 {
		t.Fatal("postmaster has no children; the check below would prove nothing")
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	requireGone(t, "postgres after parent was killed", append(pgChildren, pgPid), pgPort)
	requireGone(t, "redis after parent was killed", []int{rdPid}, rdPort)
	requireGone(t, "minio after parent was killed", []int{minioPid}, minioPort)

	// The killed server left its postmaster.pid behind; a new run must cope.
	if _, err := os.Stat(filepath.Join(dir, "pg", "postmaster.pid")); err != nil {
		t.Logf("no stale postmaster.pid to test against: %v", err)
	}
	startTestPostgres(t, PostgresOptions{DataDir: filepath.Join(dir, "pg"), Ephemeral: true})
}

func TestStartOnTakenPortFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = StartRedis(context.Background(), RedisOptions{DataDir: t.TempDir(), Port: port})
	if !errors.Is(err, errPortInUse) || !strings.Contains(err.Error(), "server log") {
		t.Fatalf("got %v, want errPortInUse with the server log", err)
	}
}

func TestLaunchOnPortRetriesTakenFreePorts(t *testing.T) {
	var tried []int
	got, err := launchOnPort(0, func(port int) (int, error) {
		tried = append(tried, port)
		if len(tried) < 3 {
			return 0, fmt.Errorf("lost the race: %w", errPortInUse)
		}
		return port, nil
	})
	if err != nil || len(tried) != 3 || got != tried[2] {
		t.Fatalf("launchOnPort = %d, %v after trying %v; want success on the third port", got, err, tried)
	}

	tried = nil
	if _, err := launchOnPort(5432, func(port int) (int, error) {
		tried = append(tried, port)
		return 0, errPortInUse
	}); !errors.Is(err, errPortInUse) || len(tried) != 1 {
		t.Fatalf("an explicit port was retried: %v, %v", tried, err)
	}
}
