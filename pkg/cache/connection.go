package cache

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Connection is where a Redis is and how to log in to it: one server
// (URL), or the primary that Redis Sentinel names (MasterName, found
// through SentinelAddrs), whose failovers the client follows: Sentinel
// announces the new primary and the client moves its connections there.
type Connection struct {
	// URL is redis[s]://[user:password@]host:port/db. With Sentinel its
	// user, password, database and scheme (rediss: TLS) still apply; its
	// host and port are not used, Sentinel says where the primary is.
	URL string
	// MasterName is the primary's name in Sentinel (its `sentinel monitor`
	// line); set, the client asks SentinelAddrs for the primary.
	MasterName    string
	SentinelAddrs []string
	// SentinelUsername and SentinelPassword log in to the Sentinels (their
	// requirepass or an ACL user), when they ask for it.
	SentinelUsername, SentinelPassword string
}

// RegisterFlags adds redis.url (with usage) and the redis.sentinel-* and
// redis.master-name flags (env REDIS_URL, REDIS_MASTER_NAME, ...).
func (c *Connection) RegisterFlags(fs *flag.FlagSet, usage string) {
	fs.StringVar(&c.URL, "redis.url", "", usage)
	fs.StringVar(&c.MasterName, "redis.master-name", "", "the Redis primary's name in Sentinel; with redis.sentinel-addrs the primary is found through Sentinel and followed through failovers (redis.url then gives only the user, password, database and TLS)")
	fs.Func("redis.sentinel-addrs", "Sentinels to ask for the primary, host:port,... (with redis.master-name)", func(s string) error {
		c.SentinelAddrs = nil
		for a := range strings.SplitSeq(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.SentinelAddrs = append(c.SentinelAddrs, a)
			}
		}
		return nil
	})
	fs.StringVar(&c.SentinelUsername, "redis.sentinel-username", "", "user to log in to the Sentinels as (with an ACL user; empty: the default user)")
	fs.StringVar(&c.SentinelPassword, "redis.sentinel-password", "", "password of the Sentinels (their requirepass or the ACL user's); give it from a Secret")
}

// Enabled reports whether a Redis is configured at all.
func (c Connection) Enabled() bool { return c.URL != "" }

// Validate says what is wrong with the settings, at start.
func (c Connection) Validate() error {
	switch {
	case c.MasterName != "" && c.URL == "":
		return errors.New("redis.master-name is set but redis.url is empty: the URL gives the user, password and database on the primary (redis://user:password@sentinel/0)")
	case c.MasterName != "" && len(c.SentinelAddrs) == 0:
		return errors.New("redis.master-name is set but redis.sentinel-addrs is empty: name the Sentinels to ask for the primary")
	case c.MasterName == "" && len(c.SentinelAddrs) > 0:
		return errors.New("redis.sentinel-addrs is set but redis.master-name is empty: name the primary the Sentinels monitor")
	}
	for _, a := range c.SentinelAddrs {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			return fmt.Errorf("redis.sentinel-addrs: %q is not host:port", a)
		}
	}
	return nil
}

// Options are the client's settings from the URL; tune adjusts them
// (timeouts, retries) before the client is made. They hold for the
// primary whether it is found by URL or through Sentinel.
func (c Connection) Options() (*redis.Options, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(c.URL)
	if err != nil {
		return nil, fmt.Errorf("parse redis.url: %w", err)
	}
	return opts, nil
}

// NewClient returns a client with opts (from Options, tuned): of the one
// server of the URL, or, with MasterName, of the primary Sentinel names,
// followed through failovers.
func (c Connection) NewClient(opts *redis.Options) *redis.Client {
	if c.MasterName == "" {
		return redis.NewClient(opts)
	}
	return redis.NewFailoverClient(c.failoverOptions(opts))
}

// failoverOptions carries opts over to a Sentinel-aware client.
func (c Connection) failoverOptions(opts *redis.Options) *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:            c.MasterName,
		SentinelAddrs:         c.SentinelAddrs,
		SentinelUsername:      c.SentinelUsername,
		SentinelPassword:      c.SentinelPassword,
		ClientName:            opts.ClientName,
		Protocol:              opts.Protocol,
		Username:              opts.Username,
		Password:              opts.Password,
		DB:                    opts.DB,
		MaxRetries:            opts.MaxRetries,
		DialTimeout:           opts.DialTimeout,
		DialerRetries:         opts.DialerRetries,
		ReadTimeout:           opts.ReadTimeout,
		WriteTimeout:          opts.WriteTimeout,
		ContextTimeoutEnabled: opts.ContextTimeoutEnabled,
		PoolSize:              opts.PoolSize,
		PoolTimeout:           opts.PoolTimeout,
		TLSConfig:             opts.TLSConfig,
	}
}

// primaryWatch bumps the namespace's epoch on a primary the client has not
// used before, before the first command on it. A failover may lose the
// primary's last writes (Redis replicates after it answers), among them a
// generation a write bumped: the new primary would hold the generation of
// before that write, and the entries stored under it would be current
// again. Every connection to a new primary is a new one, so the bump comes
// before any lookup there. The first primary of a process is taken as it
// is (a process starting does not empty the cache); a failover the process
// did not live through is bounded by redis.ttl.
type primaryWatch struct {
	bump func(ctx context.Context, primary string) error

	mu      sync.Mutex
	primary string // the address of the primary last bumped on, or first seen
}

func (w *primaryWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// A Sentinel-aware client dials whatever Sentinel names, whatever
		// addr says: the connection itself tells where it went.
		remote := conn.RemoteAddr().String()
		w.mu.Lock()
		known := w.primary
		if known == "" {
			w.primary = remote
		}
		w.mu.Unlock()
		if known == "" || known == remote {
			return conn, nil
		}
		if err := w.bump(ctx, remote); err != nil {
			conn.Close()
			return nil, fmt.Errorf("bump the find cache's epoch on the new primary %s: %w", remote, err)
		}
		w.mu.Lock()
		w.primary = remote
		w.mu.Unlock()
		return conn, nil
	}
}

func (w *primaryWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (w *primaryWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// incrAt increments key on the server at addr, logging in as client does,
// on a connection of its own (the dial hook's connection is not set up
// yet).
func incrAt(ctx context.Context, client *redis.Client, addr, key string) error {
	opts := *client.Options()
	opts.Addr, opts.Dialer, opts.OnConnect = addr, nil, nil
	opts.PoolSize, opts.MinIdleConns = 1, 0
	once := redis.NewClient(&opts)
	defer once.Close()
	return once.Incr(ctx, key).Err()
}
