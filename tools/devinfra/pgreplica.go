package devinfra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// PostgresStandbyOptions configures StartPostgresStandby.
type PostgresStandbyOptions struct {
	// Primary is the server the standby copies and then streams from; it
	// shares its superuser (and so its CredentialsFile).
	Primary *Postgres
	// DataDir receives the base backup (pg_basebackup); whatever it held
	// is replaced.
	DataDir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Name is the standby's application_name, as the primary's
	// synchronous_standby_names names it.
	Name string
	// LogFile receives the backup's and the server's output; "" means
	// DataDir + ".log".
	LogFile string
}

// StartPostgresStandby makes DataDir a base backup of the primary and
// starts it as a hot standby streaming from it, on 127.0.0.1. It reads
// (its connections are read-only) until it is promoted (Promote).
func StartPostgresStandby(ctx context.Context, o PostgresStandbyOptions) (*Postgres, error) {
	p, err := startPostgresStandby(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start postgres standby: %w", err)
	}
	return p, nil
}

func startPostgresStandby(ctx context.Context, o PostgresStandbyOptions) (*Postgres, error) {
	if o.Primary == nil || o.DataDir == "" || o.Name == "" {
		return nil, errors.New("a standby needs its Primary, DataDir and Name")
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	primary := o.Primary
	p := &Postgres{DataDir: dataDir, LogFile: o.LogFile, CredentialsFile: primary.CredentialsFile, User: primary.User,
		Password: primary.Password, binDir: primary.binDir, cred: primary.cred, ephemeral: primary.ephemeral}
	if p.LogFile == "" {
		p.LogFile = dataDir + ".log"
	}
	if err := p.copyFrom(ctx, primary, o.Name); err != nil {
		return nil, err
	}
	return launchOnPort(o.Port, func(port int) (*Postgres, error) { return p.launch(ctx, port) })
}

// Follow makes the server a standby of primary again, as an operator
// rebuilds a failed primary after a failover: it stops the server if it
// still runs, replaces its data with a base backup of primary and starts
// it as a standby named name on its own port.
func (p *Postgres) Follow(ctx context.Context, primary *Postgres, name string) error {
	if err := p.Stop(); err != nil {
		return err
	}
	p.settings = nil // a standby takes its settings from the primary's copy
	if err := p.copyFrom(ctx, primary, name); err != nil {
		return err
	}
	if _, err := p.launch(ctx, p.Port); err != nil {
		return fmt.Errorf("start postgres standby: %w", err)
	}
	return nil
}

// copyFrom replaces the data dir with a base backup of primary, set up to
// stream from it as a standby named name. The backup goes into a scratch
// dir renamed into place, so a failed one leaves no half-copied cluster.
func (p *Postgres) copyFrom(ctx context.Context, primary *Postgres, name string) error {
	scratch := p.DataDir + ".basebackup"
	for _, dir := range []string{scratch, p.DataDir} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p.DataDir), 0o755); err != nil {
		return fmt.Errorf("create data dir parent: %w", err)
	}
	if p.cred != nil {
		if err := checkReachable(filepath.Dir(p.DataDir), p.cred); err != nil {
			return err
		}
	}
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if p.cred != nil {
		if err := os.Chown(scratch, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return fmt.Errorf("chown data dir to postgres: %w", err)
		}
	}
	log, err := os.OpenFile(p.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open postgres log: %w", err)
	}
	defer log.Close()
	offset, _ := log.Seek(0, io.SeekEnd)
	// -X stream: the WAL written during the copy comes with it, so the
	// standby starts consistent. The password goes in the environment,
	// never on a command line.
	cmd := exec.CommandContext(ctx, filepath.Join(p.binDir, "pg_basebackup"), "-D", scratch,
		"-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", primary.User, "-X", "stream", "-c", "fast", "--no-sync")
	cmd.Env = []string{"PGPASSWORD=" + primary.Password, "PGSSLMODE=disable"}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	if err := runFromLockedThread(cmd); err != nil {
		_ = os.RemoveAll(scratch)
		return withLog(fmt.Errorf("pg_basebackup: %w", err), readLogTail(p.LogFile, offset))
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s application_name=%s sslmode=disable",
		primary.Port, primary.User, primary.Password, name)
	// postgresql.auto.conf is the server's own (ALTER SYSTEM's) file; the
	// copy's is the primary's, to which the standby's settings are added.
	// standby.signal makes the server start as a standby.
	files := map[string]string{
		"standby.signal": "",
		"postgresql.auto.conf": readFileOrEmpty(filepath.Join(scratch, "postgresql.auto.conf")) +
			"primary_conninfo = " + quoteSetting(conninfo) + "\n",
	}
	for file, content := range files {
		path := filepath.Join(scratch, file)
		if err := writePrivateFile(path, content); err != nil {
			return fmt.Errorf("write %s: %w", file, err)
		}
		if p.cred != nil {
			if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
				return fmt.Errorf("chown %s to postgres: %w", file, err)
			}
		}
	}
	if err := writeHBA(scratch, p.cred); err != nil {
		return err
	}
	if err := os.Rename(scratch, p.DataDir); err != nil {
		return fmt.Errorf("move the base backup into place: %w", err)
	}
	return nil
}

func readFileOrEmpty(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// quoteSetting quotes a value for a PostgreSQL configuration file.
func quoteSetting(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// Promote turns a standby into a primary, as an operator does after its
// primary is lost: pg_ctl promote, waiting until the server accepts
// writes.
func (p *Postgres) Promote(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, filepath.Join(p.binDir, "pg_ctl"), "promote", "-w", "-t", "60", "-D", p.DataDir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	if err := runFromLockedThread(cmd); err != nil {
		return withLog(fmt.Errorf("pg_ctl promote: %w", err), out.String())
	}
	return nil
}

// SetSynchronousStandby makes the server's commits wait for the standby
// named name (ALTER SYSTEM, then a reload): a commit it acknowledges is
// then on the standby's disk too, so a failover to it loses nothing
// acknowledged. With apply, a commit also waits until the standby shows
// it to its readers (remote_apply), so a read there after a write sees
// the write. An empty name stops waiting for any standby.
func (p *Postgres) SetSynchronousStandby(ctx context.Context, name string, apply bool) error {
	names := ""
	if name != "" {
		names = pgx.Identifier{name}.Sanitize()
	}
	return p.setSynchronous(ctx, names, apply)
}

// SetSynchronousQuorum makes the server's commits wait for any one of the
// named standbys (ANY 1): losing one of them, or rebuilding it, stops no
// commit, and a commit acknowledged is on at least one standby's disk.
func (p *Postgres) SetSynchronousQuorum(ctx context.Context, apply bool, names ...string) error {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = pgx.Identifier{n}.Sanitize()
	}
	return p.setSynchronous(ctx, "ANY 1 ("+strings.Join(quoted, ", ")+")", apply)
}

func (p *Postgres) setSynchronous(ctx context.Context, names string, apply bool) error {
	conn, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		return fmt.Errorf("connect to set the synchronous standby: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	commit := "on"
	if apply {
		commit = "remote_apply"
	}
	for _, stmt := range []string{
		"ALTER SYSTEM SET synchronous_standby_names = " + quoteSetting(names),
		"ALTER SYSTEM SET synchronous_commit = " + quoteSetting(commit),
		"SELECT pg_reload_conf()",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// MultiHostURL is a URL naming every server, for pgx (and libpq) to try in
// turn until one answers as attrs asks (target_session_attrs: read-write
// finds the primary, prefer-standby a standby while one is up), with the
// user, password, database and settings of base.
func MultiHostURL(base string, attrs string, servers ...*Postgres) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	var hosts []string
	for _, s := range servers {
		hosts = append(hosts, loopback(s.Port))
	}
	u.Host = strings.Join(hosts, ",")
	q := u.Query()
	q.Set("target_session_attrs", attrs)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
