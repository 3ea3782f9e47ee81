package devinfra

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// RedisOptions configures StartRedis.
type RedisOptions struct {
	// DataDir is the server's working dir. Redis here is a cache and
	// keeps nothing on disk (no RDB snapshots, no append-only file), so it
	// stays empty; the configuration, users included, goes in on stdin.
	DataDir string
	// Port to listen on; 0 picks a free one.
	Port int
	// CredentialsFile holds the password of the default user, which may do
	// everything, as a REDISCLI_AUTH line (so `set -a; . file; set +a` lets
	// redis-cli in): read when it exists, otherwise generated and written
	// with mode 0600. "" means DataDir + ".credentials".
	CredentialsFile string
	// Users are further ACL users, each limited to its keys and commands.
	Users []RedisUser
	// LogFile receives server output; "" means DataDir + ".log".
	LogFile string
	// ReplicaOf, host:port, makes the server a replica of that primary,
	// which it logs in to as the default user: the servers of a replicated
	// set share one CredentialsFile. Every server of a set may be told to
	// replicate from another later (Sentinel does it after a failover).
	ReplicaOf string
	// Cluster runs the server in Redis Cluster mode (its node file in
	// DataDir); the caller assigns it slots (CLUSTER ADDSLOTSRANGE).
	Cluster bool
}

// RedisUser is an ACL user of the server.
type RedisUser struct {
	Name, Password string
	// Keys is the glob of the keys it may read and write ("parties:*").
	Keys string
	// ReadKeys is a glob of keys it may only read ("" none).
	ReadKeys string
	// Commands it may run (lower-case names, "client|setinfo" for a
	// subcommand); nothing else, not even listing keys.
	Commands []string
}

// Rule is the user's ACL rule, for ACL SETUSER on a server that is
// already running (split on spaces) or a config file's user directive.
func (u RedisUser) Rule() []string {
	rule := []string{"reset", "on", redisPasswordHash(u.Password), "~" + u.Keys, "resetchannels", "-@all"}
	if u.ReadKeys != "" {
		rule = append(rule, "%R~"+u.ReadKeys)
	}
	for _, c := range u.Commands {
		rule = append(rule, "+"+c)
	}
	return rule
}

// Redis is a running private Redis server. Every connection must
// authenticate: the default user with Password, or one of the Users.
type Redis struct {
	Port int
	Addr string // host:port, for clients that take an address
	// URL connects as the default user, with its password:
	// redis://:PASSWORD@127.0.0.1:PORT/0.
	URL             string
	Password        string
	CredentialsFile string
	DataDir         string
	LogFile         string

	bin       string
	users     []RedisUser
	replicaOf string
	cluster   bool
	srv       *server
}

// redisPasswordKey names the password in CredentialsFile: redis-cli's own.
const redisPasswordKey = "REDISCLI_AUTH"

// StartRedis starts a Redis server on 127.0.0.1 and returns once it answers PING.
func StartRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	r, err := startRedis(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start redis: %w", err)
	}
	return r, nil
}

func startRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	dataDir, err := privateDataDir(o.DataDir)
	if err != nil {
		return nil, err
	}
	r := &Redis{DataDir: dataDir, LogFile: o.LogFile, CredentialsFile: o.CredentialsFile, users: o.Users, replicaOf: o.ReplicaOf, cluster: o.Cluster}
	if r.LogFile == "" {
		r.LogFile = dataDir + ".log"
	}
	if r.CredentialsFile == "" {
		r.CredentialsFile = dataDir + ".credentials"
	}
	for _, u := range o.Users {
		if !redisName.MatchString(u.Name) || u.Name == "default" || u.Password == "" || strings.ContainsAny(u.Keys, " \t\n\"") {
			return nil, fmt.Errorf("redis user %q: a name of letters, digits, '_' and '-' other than default, a password and a key pattern without spaces or quotes", u.Name)
		}
	}
	if r.Password, err = redisPassword(r.CredentialsFile); err != nil {
		return nil, err
	}
	if r.bin, err = RedisServerPath(); err != nil {
		return nil, err
	}
	return launchOnPort(o.Port, func(port int) (*Redis, error) {
		return r.launch(ctx, port)
	})
}

var redisName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// redisPassword reads the default user's password, or generates and
// writes it. Redis keeps no data across starts, so a new password costs
// nothing; reusing the file's keeps redis-cli sessions working.
func redisPassword(path string) (string, error) {
	values, err := readCredentials(path)
	if err == nil && values[redisPasswordKey] != "" {
		return values[redisPasswordKey], nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	password, err := NewSecret()
	if err != nil {
		return "", err
	}
	content := fmt.Sprintf("# The default user of the private Redis server (it may do everything).\n%s=%s\n", redisPasswordKey, password)
	if err := writePrivateFile(path, content); err != nil {
		return "", fmt.Errorf("write credentials file: %w", err)
	}
	return password, nil
}

// config is the server's whole configuration. It goes in on stdin
// (`redis-server -`), so no file holds it and no command line shows it;
// passwords are in it only as SHA-256 hashes anyway.
func (r *Redis) config(port int) string {
	lines := []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(port),
		"protected-mode yes",
		"dir " + strconv.Quote(r.DataDir),
		"daemonize no",
		`logfile ""`, // stdout, which startServer sends to LogFile
		// A cache: nothing on disk, ever. The cached finds are the
		// registry's resources (names, birth dates), which must not
		// outlive the server in a file.
		`save ""`,
		"appendonly no",
		"user default " + strings.Join([]string{"reset", "on", redisPasswordHash(r.Password), "~*", "&*", "+@all"}, " "),
		// A replica logs in to its primary as the default user, whose
		// password every server of a set shares. Harmless on a server
		// that never replicates.
		"masteruser default",
		"masterauth " + strconv.Quote(r.Password),
	}
	if r.replicaOf != "" {
		host, port, _ := net.SplitHostPort(r.replicaOf)
		lines = append(lines, "replicaof "+host+" "+port)
	}
	if r.cluster {
		lines = append(lines, "cluster-enabled yes", "cluster-config-file "+strconv.Quote("nodes-"+strconv.Itoa(port)+".conf"))
	}
	for _, u := range r.users {
		lines = append(lines, "user "+u.Name+" "+strings.Join(u.Rule(), " "))
	}
	return strings.Join(lines, "\n") + "\n"
}

func (r *Redis) launch(ctx context.Context, port int) (*Redis, error) {
	cmd := exec.Command(r.bin, "-")
	cmd.Stdin = strings.NewReader(r.config(port))
	srv, err := startServer("redis-server", cmd, r.LogFile)
	if err != nil {
		return nil, err
	}
	addr := loopback(port)
	if err := waitReady(ctx, srv, func(ctx context.Context) error { return pingRedis(ctx, addr, "default", r.Password) }); err != nil {
		return nil, err
	}
	r.Port, r.Addr, r.srv = port, addr, srv
	r.URL = r.UserURL("", r.Password)
	return r, nil
}

// UserURL is the URL connecting as user (the default user when "").
func (r *Redis) UserURL(user, password string) string {
	u := url.URL{Scheme: "redis", User: url.UserPassword(user, password), Host: r.Addr, Path: "/0"}
	return u.String()
}

// pingRedis speaks just enough RESP to tell a ready server from one that is
// still loading its dataset (which answers -LOADING).
func pingRedis(ctx context.Context, addr, user, password string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write([]byte(resp("AUTH", user, password) + resp("PING"))); err != nil {
		return err
	}
	replies := bufio.NewReader(conn)
	for _, want := range []string{"+OK", "+PONG"} {
		reply, err := replies.ReadString('\n')
		if err != nil {
			return err
		}
		if reply = strings.TrimSpace(reply); reply != want {
			if strings.HasPrefix(reply, "-WRONGPASS") {
				return stopWaiting(fmt.Errorf("redis refused the password: %s", reply))
			}
			return fmt.Errorf("AUTH and PING answered %q", reply)
		}
	}
	return nil
}

// resp encodes a command as a RESP array of bulk strings.
func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// Stop shuts the server down and waits for it to exit, killing it if it
// takes too long. It saves nothing.
func (r *Redis) Stop() error {
	return r.srv.stop(syscall.SIGTERM)
}

// Signal sends sig to the server (SIGSTOP pauses it, SIGCONT resumes).
func (r *Redis) Signal(sig syscall.Signal) error { return r.srv.signalGroup(sig) }

// Kill ends the server with SIGKILL and waits for it to exit; every cached
// entry is gone, as after any crash.
func (r *Redis) Kill() error { return r.srv.stop(syscall.SIGKILL) }

// Restart stops the server if it still runs and starts it again, empty, on
// the same port with the same password and users. A server of a set comes
// back as a primary of nothing; Sentinel makes it a replica again.
func (r *Redis) Restart(ctx context.Context) error {
	if err := r.Stop(); err != nil {
		return err
	}
	r.replicaOf = ""
	if _, err := r.launch(ctx, r.Port); err != nil {
		return fmt.Errorf("restart redis: %w", err)
	}
	return nil
}
