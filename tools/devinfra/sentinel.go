package devinfra

import (
	"context"
	"errors"
	"fmt"
	"net"

	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelOptions configures StartSentinel: one Redis Sentinel watching
// one primary.
type SentinelOptions struct {
	// DataDir holds the Sentinel's configuration file, which it rewrites
	// as it learns the set (replicas, other Sentinels, a new primary).
	DataDir string
	// Port to listen on; 0 picks a free one.
	Port int
	// MasterName names the primary for clients (redis.master-name).
	MasterName string
	// Master is the primary's host:port when the set is first watched.
	Master string
	// MasterPassword is the default user's password of the set's servers
	// (they share it), which the Sentinel logs in with.
	MasterPassword string
	// Password is what clients and the other Sentinels of the set log in
	// to this one with (its requirepass): every Sentinel of a set has the
	// same, and it is not the servers' password, so a client of the
	// Sentinels is given no way into Redis itself.
	Password string
	// Quorum is how many Sentinels must agree the primary is down.
	Quorum int
	// DownAfter is how long the primary must not answer to be down;
	// FailoverTimeout bounds a failover (and spaces out retries of one).
	DownAfter, FailoverTimeout time.Duration
	// LogFile receives the Sentinel's output; "" means DataDir + ".log".
	LogFile string
}

// Sentinel is a running Redis Sentinel on 127.0.0.1.
type Sentinel struct {
	Port                int
	Addr                string // host:port
	Password            string
	ConfigFile, LogFile string

	bin  string
	opts SentinelOptions
	srv  *server
}

// StartSentinel starts a Sentinel (redis-sentinel, from Debian's
// redis-sentinel package) and returns once it answers and knows the primary.
func StartSentinel(ctx context.Context, o SentinelOptions) (*Sentinel, error) {
	s, err := startSentinel(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start redis sentinel: %w", err)
	}
	return s, nil
}

func startSentinel(ctx context.Context, o SentinelOptions) (*Sentinel, error) {
	if o.MasterName == "" || o.Master == "" || o.Password == "" || o.MasterPassword == "" {
		return nil, errors.New("a Sentinel needs MasterName, Master, MasterPassword and Password")
	}
	dataDir, err := privateDataDir(o.DataDir)
	if err != nil {
		return nil, err
	}
	s := &Sentinel{Password: o.Password, ConfigFile: filepath.Join(dataDir, "sentinel.conf"), LogFile: o.LogFile, opts: o}
	if s.LogFile == "" {
		s.LogFile = dataDir + ".log"
	}
	if s.bin, err = RedisSentinelPath(); err != nil {
		return nil, err
	}
	return launchOnPort(o.Port, func(port int) (*Sentinel, error) { return s.launch(ctx, port, true) })
}

// config is the Sentinel's first configuration. It must be a file the
// Sentinel may rewrite (it records what it learns there), so it holds the
// passwords in the clear: mode 0600, in a private directory.
func (s *Sentinel) config(port int) string {
	o := s.opts
	host, mport, _ := net.SplitHostPort(o.Master)
	quorum := max(o.Quorum, 1)
	lines := []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(port),
		"protected-mode yes",
		"daemonize no",
		`logfile ""`,
		"dir " + strconv.Quote(filepath.Dir(s.ConfigFile)),
		"requirepass " + strconv.Quote(o.Password),
		// The other Sentinels of the set ask for the same password.
		"sentinel sentinel-pass " + strconv.Quote(o.Password),
		fmt.Sprintf("sentinel monitor %s %s %s %d", o.MasterName, host, mport, quorum),
		fmt.Sprintf("sentinel auth-pass %s %s", o.MasterName, strconv.Quote(o.MasterPassword)),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", o.MasterName, max(o.DownAfter, 100*time.Millisecond).Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", o.MasterName, max(o.FailoverTimeout, time.Second).Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", o.MasterName),
	}
	return strings.Join(lines, "\n") + "\n"
}

// launch starts the Sentinel; fresh writes its first configuration (a
// restart keeps what it learnt).
func (s *Sentinel) launch(ctx context.Context, port int, fresh bool) (*Sentinel, error) {
	if fresh {
		if err := writePrivateFile(s.ConfigFile, s.config(port)); err != nil {
			return nil, fmt.Errorf("write sentinel config: %w", err)
		}
	}
	cmd := exec.Command(s.bin, s.ConfigFile)
	cmd.Env = []string{}
	srv, err := startServer("redis-sentinel", cmd, s.LogFile)
	if err != nil {
		return nil, err
	}
	addr := loopback(port)
	if err := waitReady(ctx, srv, func(ctx context.Context) error { return s.knowsPrimary(ctx, addr) }); err != nil {
		return nil, err
	}
	s.Port, s.Addr, s.srv = port, addr, srv
	return s, nil
}

// knowsPrimary reports whether the Sentinel at addr answers and names the
// primary it watches.
func (s *Sentinel) knowsPrimary(ctx context.Context, addr string) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, Password: s.Password, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	got, err := c.GetMasterAddrByName(ctx, s.opts.MasterName).Result()
	if err != nil {
		if strings.Contains(err.Error(), "WRONGPASS") {
			return stopWaiting(fmt.Errorf("the Sentinel refused the password: %w", err))
		}
		return err
	}
	if len(got) != 2 {
		return fmt.Errorf("the Sentinel names no primary yet (%v)", got)
	}
	return nil
}

// Primary asks the Sentinel where the primary is now (host:port).
func (s *Sentinel) Primary(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Password: s.Password, MaxRetries: -1})
	defer c.Close()
	got, err := c.GetMasterAddrByName(ctx, s.opts.MasterName).Result()
	if err != nil {
		return "", err
	}
	if len(got) != 2 {
		return "", fmt.Errorf("the Sentinel names no primary (%v)", got)
	}
	return net.JoinHostPort(got[0], got[1]), nil
}

// Stop shuts the Sentinel down and waits for it to exit.
func (s *Sentinel) Stop() error { return s.srv.stop(syscall.SIGTERM) }

// Kill ends the Sentinel with SIGKILL and waits for it to exit.
func (s *Sentinel) Kill() error { return s.srv.stop(syscall.SIGKILL) }

// Restart stops the Sentinel if it runs and starts it again on the same
// port, with the configuration it has rewritten since (so it knows the
// set as it left it).
func (s *Sentinel) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	if _, err := s.launch(ctx, s.Port, false); err != nil {
		return fmt.Errorf("restart redis sentinel: %w", err)
	}
	return nil
}

// RedisSentinelPath returns the path of the redis-sentinel binary.
func RedisSentinelPath() (string, error) {
	p, err := exec.LookPath("redis-sentinel")
	if err == nil {
		return p, nil
	}
	if isExecutable("/usr/bin/redis-sentinel") {
		return "/usr/bin/redis-sentinel", nil
	}
	if !errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("look up redis-sentinel: %w", err)
	}
	return "", fmt.Errorf("redis-sentinel not found: %s", installHint)
}
