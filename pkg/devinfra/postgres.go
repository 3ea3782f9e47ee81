package devinfra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgresOptions configures StartPostgres.
type PostgresOptions struct {
	// DataDir is initdb'd when it holds no PG_VERSION yet and reused
	// otherwise, so data survives restarts.
	DataDir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Ephemeral trades durability for speed, for data nobody will miss.
	Ephemeral bool
	// LogFile receives initdb and server output; "" means DataDir + ".log".
	LogFile string
}

// Postgres is a running private PostgreSQL server.
type Postgres struct {
	Port    int
	URL     string // superuser "postgres", database "postgres", trust auth
	DataDir string
	LogFile string

	srv *server
}

// StartPostgres starts a PostgreSQL server on 127.0.0.1 and returns once it
// accepts connections. When running as root, initdb and the server run as the
// "postgres" OS user, since PostgreSQL refuses to run as root.
func StartPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	p, err := startPostgres(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	return p, nil
}

func startPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	if o.DataDir == "" {
		return nil, errors.New("DataDir is required")
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	logFile := o.LogFile
	if logFile == "" {
		logFile = dataDir + ".log"
	}
	binDir, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	if err := initDataDir(ctx, binDir, dataDir, logFile, cred, o.Ephemeral); err != nil {
		return nil, err
	}
	if err := removeStalePidFile(dataDir); err != nil {
		return nil, err
	}

	return launchOnPort(o.Port, func(port int) (*Postgres, error) {
		return launchPostgres(ctx, binDir, dataDir, logFile, port, cred, o.Ephemeral)
	})
}

func launchPostgres(ctx context.Context, binDir, dataDir, logFile string, port int, cred *syscall.Credential, ephemeral bool) (*Postgres, error) {
	args := []string{
		"-D", dataDir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + socketDir(dataDir),
		// Tests run many connection pools in parallel against one server.
		"-c", "max_connections=200",
	}
	if ephemeral {
		args = append(args,
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
		)
	}
	cmd := exec.Command(filepath.Join(binDir, "postgres"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	srv, err := startServer("postgres", cmd, logFile)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	err = waitReady(ctx, srv, func(ctx context.Context) error {
		conn, err := pgconn.Connect(ctx, url)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
	if err != nil {
		return nil, err
	}
	return &Postgres{Port: port, URL: url, DataDir: dataDir, LogFile: logFile, srv: srv}, nil
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// waits for it to exit, killing it if it takes too long.
func (p *Postgres) Stop() error {
	return p.srv.stop(syscall.SIGINT)
}

// socketDir keeps the Unix socket out of /var/run/postgresql, which may not
// exist or be writable. Socket paths are limited to 107 bytes, so with a deep
// data dir (t.TempDir() names embed the test name) we go TCP-only instead of
// failing to start.
func socketDir(dataDir string) string {
	if len(dataDir)+len("/.s.PGSQL.65535.lock") < 100 {
		return dataDir
	}
	return ""
}

// postgresCredential returns whom to run initdb and postgres as: nil (the
// current user) unless we are root.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a \"postgres\" OS user to run the server as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse uid of postgres user: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse gid of postgres user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// initDataDir makes sure dataDir holds a cluster that the server user can
// reach, running initdb if it holds none yet. initdb works in a scratch dir
// that is renamed into place, so a run killed mid-initdb leaves no half-made
// cluster that later starts would trip over.
func initDataDir(ctx context.Context, binDir, dataDir, logFile string, cred *syscall.Credential, ephemeral bool) error {
	parent := filepath.Dir(dataDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create data dir parent: %w", err)
	}
	if cred != nil {
		if err := checkReachable(parent, cred); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("inspect data dir: %w", err)
	}
	scratch := dataDir + ".initdb"
	if err := os.RemoveAll(scratch); err != nil {
		return fmt.Errorf("remove leftover %s: %w", scratch, err)
	}
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(scratch, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("chown data dir to postgres: %w", err)
		}
	}
	log, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open postgres log: %w", err)
	}
	defer log.Close()
	offset, _ := log.Seek(0, io.SeekEnd)

	args := []string{"-D", scratch, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := runFromLockedThread(cmd); err != nil {
		_ = os.RemoveAll(scratch)
		return withLog(fmt.Errorf("initdb: %w", err), readLogTail(logFile, offset))
	}
	// rename(2) replaces an empty directory, so a pre-created DataDir is fine;
	// a non-empty one without PG_VERSION is not ours to overwrite.
	if err := os.Rename(scratch, dataDir); err != nil {
		_ = os.RemoveAll(scratch)
		return fmt.Errorf("move initdb result into place (is %s a non-empty non-PostgreSQL dir?): %w", dataDir, err)
	}
	return nil
}

// checkReachable makes sure the postgres user can traverse into dir. Asking
// the kernel (by trying) gets ACLs and supplementary groups right.
func checkReachable(dir string, cred *syscall.Credential) error {
	cmd := exec.Command("/bin/sh", "-c", `cd -- "$1"`, "sh", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the postgres user (uid %d) cannot reach %s; every directory on that path must be searchable by it (e.g. chmod o+x): %v: %s",
			cred.Uid, dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeStalePidFile deletes a postmaster.pid left by a server that was
// killed, unless its pid is still a running postgres process (the server then
// refuses to start, so two servers never share a data dir). PostgreSQL itself
// tolerates the file only if the pid is gone, but in containers pids are
// reused quickly, and a killed postmaster whose parent died stays a zombie
// (which PostgreSQL counts as running) until pid 1 gets round to reaping it;
// some container inits never do.
func removeStalePidFile(dataDir string) error {
	pidFile := filepath.Join(dataDir, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read %s: %w", pidFile, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && isLivePostgres(pid) {
		return nil
	}
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", pidFile, err)
	}
	return nil
}

// isLivePostgres reports whether pid is a postgres process that has not exited.
func isLivePostgres(pid int) bool {
	comm, running := processState(pid)
	return running && strings.HasPrefix(comm, "postgres")
}

// processState returns pid's command name and whether it is running: it
// exists and is not a zombie, which in a container whose pid 1 never reaps
// orphans a dead server can stay for good.
func processState(pid int) (comm string, running bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// Format: "pid (comm) state ...", where comm may itself contain ") ".
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+3 > len(s) {
		return "", false
	}
	state := s[end+2]
	return s[open+1 : end], state != 'Z' && state != 'X'
}
