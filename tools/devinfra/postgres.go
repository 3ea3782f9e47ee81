package devinfra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
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
	// CredentialsFile holds the superuser's password, as PGUSER and
	// PGPASSWORD lines (so `set -a; . file; set +a` lets psql in): read when
	// it exists, otherwise generated, set on the server and written with
	// mode 0600. "" means DataDir + ".credentials".
	CredentialsFile string
	// LogFile receives initdb and server output; "" means DataDir + ".log".
	LogFile string
	// Settings are more server settings, name=value (given with -c).
	Settings []string
}

// Postgres is a running private PostgreSQL server. Every connection, over
// TCP or the Unix socket, needs a password (SCRAM-SHA-256): no local user
// gets in for being local.
type Postgres struct {
	Port int
	// URL connects as the superuser "postgres", with its password, to
	// database "postgres".
	URL             string
	User, Password  string
	CredentialsFile string
	DataDir         string
	LogFile         string

	binDir    string
	cred      *syscall.Credential
	ephemeral bool
	settings  []string
	srv       *server
}

const (
	postgresSuperuser = "postgres"
	// Names of the credentials in CredentialsFile: libpq's own.
	postgresUserKey     = "PGUSER"
	postgresPasswordKey = "PGPASSWORD"
)

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
	p := &Postgres{DataDir: dataDir, LogFile: o.LogFile, CredentialsFile: o.CredentialsFile, User: postgresSuperuser,
		ephemeral: o.Ephemeral, settings: o.Settings}
	if p.LogFile == "" {
		p.LogFile = dataDir + ".log"
	}
	if p.CredentialsFile == "" {
		p.CredentialsFile = dataDir + ".credentials"
	}
	if p.binDir, err = PostgresBinDir(); err != nil {
		return nil, err
	}
	if p.cred, err = postgresCredential(); err != nil {
		return nil, err
	}
	created, err := initDataDir(ctx, p.binDir, dataDir, p.LogFile, p.cred, o.Ephemeral)
	if err != nil {
		return nil, err
	}
	if err := removeStalePidFile(dataDir); err != nil {
		return nil, err
	}
	if err := p.ensurePassword(ctx, created); err != nil {
		return nil, err
	}
	if err := writeHBA(dataDir, p.cred); err != nil {
		return nil, err
	}
	return launchOnPort(o.Port, func(port int) (*Postgres, error) {
		return p.launch(ctx, port)
	})
}

// ensurePassword makes the superuser's password the one in the credentials
// file, generating one when there is no file. A new cluster gets its
// password set; so does an existing cluster whose file is missing (one
// from before passwords, which trusted every local user, or one whose file
// was lost: whoever can read the data dir can set the password anyway).
// The file is written only after the server has the password, so a failed
// start never leaves a file that does not match.
func (p *Postgres) ensurePassword(ctx context.Context, created bool) error {
	values, err := readCredentials(p.CredentialsFile)
	switch {
	case err == nil:
		p.Password = values[postgresPasswordKey]
		if p.Password == "" {
			return fmt.Errorf("credentials file %s lacks %s; remove it to have a new password set", p.CredentialsFile, postgresPasswordKey)
		}
		if !created {
			return nil
		}
		return setSuperuserPassword(ctx, p.binDir, p.DataDir, p.LogFile, p.cred, p.Password)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if p.Password, err = NewSecret(); err != nil {
		return err
	}
	if err := setSuperuserPassword(ctx, p.binDir, p.DataDir, p.LogFile, p.cred, p.Password); err != nil {
		return err
	}
	content := fmt.Sprintf("# The superuser of the PostgreSQL server whose data is in %s.\n%s=%s\n%s=%s\n",
		p.DataDir, postgresUserKey, postgresSuperuser, postgresPasswordKey, p.Password)
	if err := writePrivateFile(p.CredentialsFile, content); err != nil {
		return fmt.Errorf("write credentials file: %w", err)
	}
	return nil
}

// setSuperuserPassword sets the password in single-user mode, which needs
// no connection and so no authentication: it works on a new cluster and on
// one whose password is unknown. The statement carries the SCRAM verifier,
// never the password, since single-user mode logs a failed statement.
func setSuperuserPassword(ctx context.Context, binDir, dataDir, logFile string, cred *syscall.Credential, password string) error {
	verifier, err := PostgresPasswordVerifier(password)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "postgres"), "--single", "-D", dataDir,
		"-c", "listen_addresses=", "-c", "unix_socket_directories=", "postgres")
	cmd.Stdin = strings.NewReader("ALTER ROLE " + postgresSuperuser + " PASSWORD '" + verifier + "';\n")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	err = runFromLockedThread(cmd)
	// Single-user mode exits 0 after a failed statement; its output says.
	if err != nil || strings.Contains(out.String(), "ERROR:") || strings.Contains(out.String(), "FATAL:") {
		return withLog(fmt.Errorf("set the superuser's password (single-user mode): %v", err), out.String())
	}
	return nil
}

// hbaConfig admits every user, over TCP on loopback and over the Unix
// socket alike, with a password only.
const hbaConfig = `# Written by pkg/devinfra at every start: a password (SCRAM-SHA-256) for
# everyone, whether over the socket or on loopback; nobody is trusted for
# being local. Replication (a standby's base backup and its stream) alike.
local all all scram-sha-256
host  all all 127.0.0.1/32 scram-sha-256
host  replication all 127.0.0.1/32 scram-sha-256
`

// writeHBA (re)writes pg_hba.conf at every start, so a data dir made before
// passwords (initdb -A trust) is brought under them as well.
func writeHBA(dataDir string, cred *syscall.Credential) error {
	path := filepath.Join(dataDir, "pg_hba.conf")
	if err := writePrivateFile(path, hbaConfig); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	if cred != nil {
		if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("chown pg_hba.conf to postgres: %w", err)
		}
	}
	return nil
}

func (p *Postgres) launch(ctx context.Context, port int) (*Postgres, error) {
	args := []string{
		"-D", p.DataDir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + socketDir(p.DataDir),
		"-c", "password_encryption=scram-sha-256",
		// Tests run many connection pools in parallel against one server.
		"-c", "max_connections=200",
	}
	if p.ephemeral {
		args = append(args,
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
		)
	}
	for _, setting := range p.settings {
		args = append(args, "-c", setting)
	}
	// For measuring the server as an installation configures it (make
	// bench with production's shared_buffers): more -c settings, given as
	// name=value separated by spaces; the last of a name wins.
	for _, setting := range strings.Fields(os.Getenv("REGISTRY_PG_SETTINGS")) {
		args = append(args, "-c", setting)
	}
	if os.Getenv("REGISTRY_PG_STAT_STATEMENTS") != "" {
		// For finding which statements cost the server its CPU: the
		// bench creates the extension and prints the server's URL.
		args = append(args, "-c", "shared_preload_libraries=pg_stat_statements")
	}
	cmd := exec.Command(filepath.Join(p.binDir, "postgres"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	srv, err := startServer("postgres", cmd, p.LogFile)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(p.User, p.Password),
		Host: loopback(port), Path: "/postgres", RawQuery: "sslmode=disable"}
	err = waitReady(ctx, srv, func(ctx context.Context) error {
		conn, err := pgconn.Connect(ctx, u.String())
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "28P01" { // invalid_password
				return stopWaiting(fmt.Errorf("the password in %s is not the server's: %w", p.CredentialsFile, err))
			}
			return err
		}
		return conn.Close(ctx)
	})
	if err != nil {
		return nil, err
	}
	p.Port, p.URL, p.srv = port, u.String(), srv
	return p, nil
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// waits for it to exit, killing it if it takes too long.
func (p *Postgres) Stop() error {
	return p.srv.stop(syscall.SIGINT)
}

// Signal sends sig to the server and every backend it forked (its process
// group): SIGSTOP then SIGCONT pauses the whole server, not only the
// postmaster, which would leave open sessions answering.
func (p *Postgres) Signal(sig syscall.Signal) error { return p.srv.signalGroup(sig) }

// Kill ends the server and its backends with SIGKILL, a crash, and waits
// for them to exit; Restart brings it back (with crash recovery).
func (p *Postgres) Kill() error { return p.srv.stop(syscall.SIGKILL) }

// Restart stops the server if it still runs (fast shutdown) and starts it
// again on the same port with the same data and settings.
func (p *Postgres) Restart(ctx context.Context) error {
	if err := p.Stop(); err != nil {
		return err
	}
	if err := removeStalePidFile(p.DataDir); err != nil {
		return err
	}
	if _, err := p.launch(ctx, p.Port); err != nil {
		return fmt.Errorf("restart postgres: %w", err)
	}
	return nil
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

// initdbArgs are initdb's arguments but the data directory: the
// template's key (templateDir) as well as the command.
func initdbArgs(ephemeral bool) []string {
	args := []string{"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	return args
}

// initDataDir makes sure dataDir holds a cluster that the server user can
// reach, running initdb if it holds none yet. initdb works in a scratch dir
// that is renamed into place, so a run killed mid-initdb leaves no half-made
// cluster that later starts would trip over.
func initDataDir(ctx context.Context, binDir, dataDir, logFile string, cred *syscall.Credential, ephemeral bool) (created bool, err error) {
	parent := filepath.Dir(dataDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return false, fmt.Errorf("create data dir parent: %w", err)
	}
	if cred != nil {
		if err := checkReachable(parent, cred); err != nil {
			return false, err
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("inspect data dir: %w", err)
	}
	scratch := dataDir + ".initdb"
	if err := os.RemoveAll(scratch); err != nil {
		return false, fmt.Errorf("remove leftover %s: %w", scratch, err)
	}
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return false, fmt.Errorf("create data dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(scratch, int(cred.Uid), int(cred.Gid)); err != nil {
			return false, fmt.Errorf("chown data dir to postgres: %w", err)
		}
	}
	log, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return false, fmt.Errorf("open postgres log: %w", err)
	}
	defer log.Close()
	offset, _ := log.Seek(0, io.SeekEnd)

	args := initdbArgs(ephemeral)
	initdb := func(dir string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), append([]string{"-D", dir}, args...)...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		if err := runFromLockedThread(cmd); err != nil {
			return withLog(fmt.Errorf("initdb: %w", err), readLogTail(logFile, offset))
		}
		return nil
	}
	if ephemeral {
		err = fromTemplate(ctx, binDir, scratch, args, cred, initdb)
	} else {
		err = initdb(scratch)
	}
	if err != nil {
		_ = os.RemoveAll(scratch)
		return false, err
	}
	// rename(2) replaces an empty directory, so a pre-created DataDir is fine;
	// a non-empty one without PG_VERSION is not ours to overwrite.
	if err := os.Rename(scratch, dataDir); err != nil {
		_ = os.RemoveAll(scratch)
		return false, fmt.Errorf("move initdb result into place (is %s a non-empty non-PostgreSQL dir?): %w", dataDir, err)
	}
	return true, nil
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

// EnsureDatabase creates the database name on the server at serverURL (a
// superuser's) unless it exists, and returns its URL; "" is the server's
// own database.
func EnsureDatabase(ctx context.Context, serverURL, name string) (string, error) {
	if name == "" {
		return serverURL, nil
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops the database name on the server at serverURL, ending
// the sessions still in it.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
